// Rotary position embedding tables of a model: the inverse frequencies of
// its rotating dimensions (with the config's rope_scaling applied) and the
// factor HF multiplies cos and sin by (YaRN's attention scaling), exactly as
// HF transformers' modeling_rope_utils computes them:
//   none    inv_freq[i] = theta^(-2i/d)                  (d = rotary dims)
//   linear  inv_freq[i] / factor
//   yarn    a ramp between theta^(-2i/d) / factor (low frequencies) and
//           theta^(-2i/d) (high ones) over the dimensions whose wavelength
//           lies between original_max / beta_slow and original_max /
//           beta_fast rotations; cos and sin scaled by attention_factor
//           (given, else mscale(factor, mscale) / mscale(factor,
//           mscale_all_dim), else 0.1 ln(factor) + 1)
//   llama3  low frequencies / factor, high ones kept, a smooth blend between
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "common/model/model_config.h"

namespace dancemoe {

struct RopeFrequencies {
  std::vector<double> inv_freq;   // [rope_dim / 2]
  double attention_factor = 1.0;  // multiplies cos and sin
};

RopeFrequencies rope_frequencies(const ModelConfig& config);

// cos / sin of positions [pos0, pos0 + n_tokens): [n_tokens, rope_dim / 2] each,
// times the attention factor.
void rope_tables(const RopeFrequencies& freqs, int64_t pos0, int64_t n_tokens,
                 std::vector<float>* cos, std::vector<float>* sin);

// The attention softmax scale: attention_scale_multiplier / sqrt(q/k head dim).
float attention_softmax_scale(const ModelConfig& config);

}  // namespace dancemoe
