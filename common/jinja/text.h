// Python str semantics over UTF-8 text, for the Jinja interpreter: code
// point counting and slicing, whitespace as str.isspace() sees it, and the
// str methods chat templates call (strip, split, replace, ...).
//
// Inputs are valid UTF-8 (template sources are checked when parsed; JSON
// values were checked by their parser), so every result is valid UTF-8 too.
// Case mapping (lower/upper/title) is ASCII-only; other letters are kept.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dancemoe::jinja {

bool utf8_valid(std::string_view s);
// Number of code points.
size_t utf8_length(std::string_view s);
// Byte offsets of each code point start, plus s.size() at the end.
std::vector<size_t> utf8_offsets(std::string_view s);
// Appends code point `cp` as UTF-8.
void utf8_append(std::string& out, uint32_t cp);
// Decodes the code point starting at byte `pos`, advancing it.
uint32_t utf8_next(std::string_view s, size_t& pos);

// Python's str.isspace() for one code point.
bool is_space(uint32_t cp);

// str.strip/lstrip/rstrip: `chars` absent strips whitespace, else any of the
// code points in *chars.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right);
// str.split: no separator splits on whitespace runs (dropping empty parts);
// max_split < 0 means no limit. An empty separator is the caller's error.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t max_split);
// str.rsplit.
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t max_split);
// str.replace; count < 0 replaces every occurrence.
std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement,
                       int64_t count);
std::string ascii_lower(std::string_view s);
std::string ascii_upper(std::string_view s);
// str.title(): first letter of each letter run upper, the rest lower.
std::string ascii_title(std::string_view s);
// str.capitalize().
std::string ascii_capitalize(std::string_view s);

}  // namespace dancemoe::jinja
