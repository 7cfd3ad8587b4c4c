#include "scheduler/cli/cluster/cluster_format.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace dancemoe::cli {
namespace {

std::string format(const char* fmt, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), fmt, v);
  return buffer;
}

// Width as shown: ANSI escape sequences take no columns.
size_t visible_width(const std::string& s) {
  size_t width = 0;
  bool escape = false;
  for (char c : s) {
    if (c == '\033') {
      escape = true;
    } else if (escape) {
      if (c == 'm') escape = false;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++width;  // count UTF-8 lead bytes only
    }
  }
  return width;
}

// The first `n` visible characters of `s`, colour codes dropped.
std::string visible_prefix(const std::string& s, size_t n) {
  std::string out;
  size_t width = 0;
  bool escape = false;
  for (char c : s) {
    if (c == '\033') {
      escape = true;
    } else if (escape) {
      if (c == 'm') escape = false;
    } else {
      const bool lead = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      if (lead && width == n) break;
      if (lead) ++width;
      out += c;
    }
  }
  return out;
}

std::string wrap(bool enabled, const char* code, const std::string& text) {
  if (!enabled) return text;
  return std::string("\033[") + code + "m" + text + "\033[0m";
}

}  // namespace

bool use_colour() { return isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr; }

size_t terminal_width() {
  winsize size{};
  if (isatty(STDOUT_FILENO) != 0 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0) {
    return size.ws_col;
  }
  if (const char* columns = std::getenv("COLUMNS")) {
    const long n = std::strtol(columns, nullptr, 10);
    if (n > 0 && n < 10000) return static_cast<size_t>(n);
  }
  return 0;
}

std::string clock_text(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm local{};
  localtime_r(&t, &local);
  char buffer[16];
  std::strftime(buffer, sizeof buffer, "%H:%M:%S", &local);
  return buffer;
}

std::string bytes_text(double bytes) {
  static const char* const kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int unit = 0;
  while (bytes >= 1000.0 && unit < 5) {
    bytes /= 1000.0;
    ++unit;
  }
  return format(unit == 0 ? "%.0f" : "%.1f", bytes) + " " + kUnits[unit];
}

std::string ratio_text(const nlohmann::json& ratio) {
  if (!ratio.is_number()) return "-";
  return format("%.1f", ratio.get<double>() * 100.0) + "%";
}

std::string duration_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  if (seconds < 60) return format("%.1f", seconds) + "s";
  const int64_t s = static_cast<int64_t>(seconds);
  char buffer[64];
  if (s < 3600) {
    std::snprintf(buffer, sizeof(buffer), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(buffer, sizeof(buffer), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>((s % 3600) / 60));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>((s % 86400) / 3600));
  }
  return buffer;
}

std::string seconds_text(double seconds) { return format("%.3f", seconds) + " s"; }

std::string decision_text(const nlohmann::json& d) {
  // Appended piece by piece: `"#" + std::string&&` trips GCC 12's false
  // -Wrestrict at -O3.
  std::string out = "#";
  out += std::to_string(d.value("id", int64_t{0}));
  out += ' ';
  out += d.value("trigger", std::string());
  out += ", ";
  out += d.value("policy", std::string());
  out += ": ";
  out += d.value("outcome", std::string());
  if (d.value("outcome", std::string()) == "adopted") {
    out += " as version " + std::to_string(d.value("version", uint64_t{0}));
  }
  if (d.value("outcome", std::string()) != "error" &&
      d.value("outcome", std::string()) != "skipped") {
    out += " (C(P) = " + seconds_text(d.value("cost_current_s", 0.0)) +
           ", C(P') = " + seconds_text(d.value("cost_new_s", 0.0)) +
           ", T_mig = " + seconds_text(d.value("migration_s", 0.0)) + ")";
  }
  const std::string message = d.value("message", std::string());
  if (!message.empty()) out += " -- " + message;
  return out;
}

std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent,
                  size_t max_width) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], visible_width(row[c]));
  }
  auto total = [&] {
    size_t sum = visible_width(indent);
    for (size_t w : widths) sum += w + 2;
    return sum - 2;
  };
  // Narrow the widest column, a character at a time, down to 4 characters.
  while (max_width > 0 && total() > max_width) {
    const auto widest = std::max_element(widths.begin(), widths.end());
    if (widest == widths.end() || *widest <= 4) break;
    --*widest;
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      std::string cell = row[c];
      if (visible_width(cell) > widths[c]) cell = visible_prefix(cell, widths[c] - 1) + "~";
      line += cell;
      if (c + 1 < row.size()) line += std::string(widths[c] - visible_width(cell) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string Palette::node(size_t i, const std::string& text) const {
  static const char* const kColours[] = {"32", "34", "35", "36", "33", "31",
                                         "92", "94", "95", "96", "93", "91"};
  return wrap(enabled, kColours[i % std::size(kColours)], text);
}

std::string Palette::bold(const std::string& text) const { return wrap(enabled, "1", text); }
std::string Palette::dim(const std::string& text) const { return wrap(enabled, "2", text); }
std::string Palette::warn(const std::string& text) const { return wrap(enabled, "1;31", text); }

}  // namespace dancemoe::cli
