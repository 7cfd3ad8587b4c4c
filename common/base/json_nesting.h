// check_json_nesting: refuses JSON text nested deeper than a bound, before
// it is parsed. nlohmann's parser itself is iterative, but dump(), the
// comparison operators and every reader that walks a value recurse once per
// level, so a body like [[[[...]]]] 100k deep crashed a process that echoed
// it in an error. Every reader of JSON from outside (HTTP bodies, files a
// user names, messages from peers) checks the text first.
//
// A linear scan that skips string contents; it does not validate the text
// (the parser does that next). Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "common/base/status.h"

namespace dancemoe {

// Deep enough for any configuration, request or JSON schema we accept.
constexpr size_t kMaxJsonNesting = 128;

// invalid_argument "<what>: JSON nested deeper than N levels (at byte B)".
Status check_json_nesting(std::string_view text, std::string_view what,
                          size_t max_depth = kMaxJsonNesting);

}  // namespace dancemoe
