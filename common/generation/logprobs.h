// Log-probabilities of generated tokens, as OpenAI's `logprobs` /
// `top_logprobs` report them: the log-softmax of the model's logits row for
// that step -- before logit_bias, penalties, a response_format constraint
// and the temperature (vLLM's default, "raw" logprobs) -- of the chosen
// token and of the n most likely ones.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dancemoe {

struct TokenChoice {
  int32_t id = 0;
  float logprob = 0.0f;
};

struct TokenLogprobs {
  int32_t id = 0;  // the generated token
  float logprob = 0.0f;
  std::vector<TokenChoice> top;  // most likely first (ties: lower id first)
};

// `n_top` >= 0 alternatives (at most the row's length).
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int32_t n_top);

}  // namespace dancemoe
