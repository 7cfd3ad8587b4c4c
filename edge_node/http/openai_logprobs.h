// The "logprobs" of an OpenAI answer (or of one stream chunk), from the
// generator's per-token log-probabilities (common/generation/logprobs.h):
//
//   chat         {"content": [{"token", "logprob", "bytes": [int...],
//                  "top_logprobs": [{"token", "logprob", "bytes"}...]}...]}
//   completions  {"tokens": [str...], "token_logprobs": [float...],
//                 "top_logprobs": [{str: float}...], "text_offset": [int...]}
//
// "token" is the token's text as decoding shows it (a token that ends
// inside a UTF-8 character shows U+FFFD; "bytes" has its exact bytes).
// Pure functions (the namer is called for each id); thread-safe as far as
// the namer is.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "common/generation/logprobs.h"

namespace dancemoe::node {

struct TokenNamer {
  std::function<std::string(int32_t)> text;   // decoded text of one id
  std::function<std::string(int32_t)> bytes;  // raw bytes of one id
};

nlohmann::json chat_logprobs_json(std::span<const TokenLogprobs> tokens, const TokenNamer& names);
// `text_offset`: where the first token's text starts in the choice's text;
// advanced past the tokens (streams call this once per chunk).
nlohmann::json completion_logprobs_json(std::span<const TokenLogprobs> tokens,
                                        const TokenNamer& names, int64_t* text_offset);

}  // namespace dancemoe::node
