// Sampler: picks the next token from a row of logits. adjust() first applies
// what the request asks of the row: logit_bias (added), the repetition
// penalty (over the prompt and the generated tokens: a positive logit is
// divided by it, a negative one multiplied, as vLLM and HF do), then the
// frequency and presence penalties (over the generated tokens: minus
// frequency x count, minus presence once, as OpenAI defines them).
//
// sample(): temperature 0 is greedy (argmax, lowest id on ties); otherwise
// the logits are divided by the temperature, cut to the top_k most likely
// (0: no cut), then to those at least min_p times as likely as the most
// likely (0: no cut), then to the smallest set whose probability reaches
// top_p (1: no cut), renormalised and sampled with a seeded generator, so a
// seed reproduces a generation (on CPUs of one kernel level: the
// probabilities come from that level's vectorised softmax, whose last bits
// differ between levels). Tokens at -infinity (masked by a
// constraint) are never picked unless nothing else is left.
// Not thread-safe (owns its random state, history and scratch).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int32_t top_k = 0;         // 0: all tokens
  float top_p = 1.0f;        // (0, 1]
  float min_p = 0.0f;        // [0, 1]
  uint64_t seed = 0;
  float presence_penalty = 0.0f;                      // [-2, 2]
  float frequency_penalty = 0.0f;                     // [-2, 2]
  float repetition_penalty = 1.0f;                    // (0, 10]; 1: off
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, [-100, 100])

  // invalid_argument naming the field for negative temperature, top_p outside (0, 1] etc.
  Status validate() const;
  // Whether adjust() changes anything.
  bool adjusts() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  // The tokens the repetition penalty counts besides the generated ones.
  void set_prompt(std::span<const int32_t> prompt);
  // A token was generated: the penalties count it from now on.
  void accept(int32_t id);
  // Applies logit_bias and the penalties to `logits` in place.
  void adjust(std::span<float> logits) const;
  // Picks a token from a row (adjusted by the caller).
  int32_t sample(std::span<const float> logits);

 private:
  // Sorts until candidates_' first n are the n most likely, in order.
  void sort_first(size_t n);
  // Draws a token of `logits` by probs_ without cuts; `top` is the most likely.
  int32_t draw_all(std::span<const float> logits, int32_t top);

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> prompt_;                  // sorted, unique
  std::unordered_map<int32_t, int32_t> counts_;  // generated token -> times
  // (logit, token) of the tokens not masked; within sample(), (weight,
  // token) once the most likely is known. Either way the larger first.
  std::vector<std::pair<float, int32_t>> candidates_;
  size_t sorted_ = 0;              // candidates_[0, sorted_) are the most likely, in order
  std::vector<float> probs_;       // within sample(): every token's probability
  std::vector<float> block_sums_;  // within draw_all(): probs_ summed by 16
};

}  // namespace dancemoe
