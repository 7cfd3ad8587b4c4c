// Text rendering for the cluster commands (status, nodes, placement,
// migrations): aligned tables, human units, and ANSI colour only when
// stdout is a terminal (and NO_COLOR is unset), so piped output stays plain.
// Pure functions apart from the terminal check; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dancemoe::cli {

// True when stdout is a terminal and NO_COLOR is not set.
bool use_colour();

// "12.6 MB", "3.0 GB".
std::string bytes_text(double bytes);
// "82.1%", or "-" for null.
std::string ratio_text(const nlohmann::json& ratio);
// "2m13s", "45.2s", "3h05m".
std::string duration_text(double seconds);
// "1.234 s" with 3 decimals.
std::string seconds_text(double seconds);

// One placement decision: "#7 periodic, optimal: adopted v5 (C(P) = ..., C(P') = ...,
// T_mig = ...) -- message".
std::string decision_text(const nlohmann::json& decision);

// Columns padded to the widest cell; the first row is the header. With
// `max_width` > 0 the widest columns are cut (cells end in '~', colour
// dropped from a cut cell) until a line fits.
std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent,
                  size_t max_width = 0);

// Columns of the terminal on stdout (TIOCGWINSZ, else $COLUMNS); 0 when
// stdout is not a terminal and COLUMNS is unset: no limit.
size_t terminal_width();

// "14:05:09", the local time of a unix time in milliseconds.
std::string clock_text(int64_t unix_ms);

// Colours for node i (cycled), and emphasis; no-ops when `enabled` is false.
struct Palette {
  bool enabled = false;
  std::string node(size_t i, const std::string& text) const;
  std::string bold(const std::string& text) const;
  std::string dim(const std::string& text) const;
  std::string warn(const std::string& text) const;
};

}  // namespace dancemoe::cli
