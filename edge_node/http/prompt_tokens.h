// tokenize_within: a prompt's tokens, found to be too many before the
// whole prompt is tokenized. A client could send 16 MiB of text to a model
// with a 4k context; tokenizing all of it only to refuse it cost seconds of
// a handler thread. Texts longer than a few bytes per allowed token are
// tokenized by growing prefixes (cut at whitespace, doubling), and the
// first prefix with clearly more than `limit` tokens ends it: the prompt
// cannot fit, and the answer says "at least N tokens". The work is bounded
// by the limit, not by the text.
//
// "Clearly": a prefix's count may differ from the same span's count in the
// whole text near the cut (a word or a special token split in two), so a
// prefix must exceed the limit by kCutMargin tokens to count as proof.
// Thread-safe as far as `tokenize` is.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/base/status.h"

namespace dancemoe::node {

struct PromptTokens {
  std::vector<int32_t> ids;  // all of them when `complete`
  bool complete = true;      // false: the text has more than `limit` tokens;
  size_t at_least = 0;       // then it has at least this many
};

inline constexpr size_t kCutMargin = 16;

using Tokenize = std::function<Result<std::vector<int32_t>>(const std::string& text)>;

Result<PromptTokens> tokenize_within(const std::string& text, size_t limit,
                                     const Tokenize& tokenize);

}  // namespace dancemoe::node
