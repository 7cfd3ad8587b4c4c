#include "common/base/byte_size.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace dancemoe {
namespace {

Status bad_size(std::string_view text, std::string_view what) {
  return invalid_argument(std::string(what) +
                          ": expected a byte size such as 512M, 1.5G or 1048576 (K/M/G/T are "
                          "powers of 1024), got '" +
                          std::string(text) + "'");
}

// Powers of 1024 for the unit after the number; -1 for an unknown unit.
double unit_scale(std::string_view unit) {
  std::string upper(unit);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  constexpr std::string_view kPrefixes = "KMGT";
  if (!upper.empty() && kPrefixes.find(upper[0]) != std::string_view::npos) {
    scale = std::pow(1024.0, static_cast<double>(kPrefixes.find(upper[0]) + 1));
    upper.erase(0, 1);
  }
  if (!upper.empty() && upper != "B" && upper != "IB") return -1;
  if (upper == "IB" && scale == 1) return -1;  // "iB" alone is not a unit
  return scale;
}

}  // namespace

Result<uint64_t> parse_byte_size(std::string_view text, std::string_view what) {
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return bad_size(text, what);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || end != text.data() + digits) return bad_size(text, what);
  const double scale = unit_scale(text.substr(digits));
  // 2^64 is exactly representable; anything at or above it does not fit.
  if (scale < 0 || !std::isfinite(value) || value * scale >= 18446744073709551616.0) {
    return bad_size(text, what);
  }
  return static_cast<uint64_t>(value * scale);
}

Result<std::vector<uint64_t>> parse_byte_size_list(std::string_view text, std::string_view what) {
  std::vector<uint64_t> values;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    DMOE_ASSIGN_OR_RETURN(uint64_t value, parse_byte_size(text.substr(at, comma - at), what));
    values.push_back(value);
    at = comma + 1;
  }
  return values;
}

std::string format_bytes(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, " (%.1f MiB)", static_cast<double>(bytes) / (1 << 20));
  return std::to_string(bytes) + " bytes" + text;
}

}  // namespace dancemoe
