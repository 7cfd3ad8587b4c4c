// Sampler: picks the next token from a row of logits. temperature 0 is
// greedy (argmax, lowest id on ties); otherwise the logits are divided by the
// temperature, cut to the top_k most likely (0: no cut), then to the
// smallest set whose probability reaches top_p (1: no cut), renormalised and
// sampled with a seeded generator, so a seed reproduces a generation.
// Not thread-safe (owns its random state and scratch).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy
  int32_t top_k = 0;         // 0: all tokens
  float top_p = 1.0f;        // (0, 1]
  uint64_t seed = 0;

  // invalid_argument naming the field for negative temperature, top_p outside (0, 1] etc.
  Status validate() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);

  int32_t sample(std::span<const float> logits);

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;
};

}  // namespace dancemoe
