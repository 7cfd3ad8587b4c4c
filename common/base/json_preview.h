// json_preview: a JSON value as an error message shows it -- its compact
// text, cut after a bound. Unlike nlohmann's dump(), which recurses once per
// level (a 100k-deep array from a client overflowed the stack) and writes
// the whole value before anyone could cut it, this walks the value with an
// explicit stack and stops as soon as the bound is reached, so it costs
// O(max_chars) whatever the value's depth or size.
//
// Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace dancemoe {

// At most `max_chars` characters (plus "..." when cut). Strings that are
// not UTF-8 are shown with U+FFFD, never an exception.
std::string json_preview(const nlohmann::json& value, size_t max_chars = 60);
std::string json_preview(const nlohmann::ordered_json& value, size_t max_chars = 60);

}  // namespace dancemoe
