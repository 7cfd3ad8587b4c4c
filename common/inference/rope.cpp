#include "common/inference/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace dancemoe {
namespace {

// The dimension index at which `n_rotations` full turns fit into max_pos.
double correction_dim(double n_rotations, double dim, double base, double max_pos) {
  return dim * std::log(max_pos / (n_rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

void apply_yarn(const RopeScaling& r, double base, int64_t dim, RopeFrequencies* f) {
  const auto max_pos = static_cast<double>(r.original_max_position_embeddings);
  double low = correction_dim(r.beta_fast, static_cast<double>(dim), base, max_pos);
  double high = correction_dim(r.beta_slow, static_cast<double>(dim), base, max_pos);
  if (r.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // avoid a division by zero, as HF does
  for (size_t i = 0; i < f->inv_freq.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;  // share of the unscaled frequency
    const double extra = f->inv_freq[i];
    const double inter = extra / r.factor;
    f->inv_freq[i] = inter * (1.0 - extrapolation) + extra * extrapolation;
  }
  if (r.attention_factor > 0.0) {
    f->attention_factor = r.attention_factor;
  } else if (r.mscale > 0.0 && r.mscale_all_dim > 0.0) {
    f->attention_factor = yarn_mscale(r.factor, r.mscale) / yarn_mscale(r.factor, r.mscale_all_dim);
  } else {
    f->attention_factor = yarn_mscale(r.factor, 1.0);
  }
}

void apply_llama3(const RopeScaling& r, RopeFrequencies* f) {
  const auto old_context = static_cast<double>(r.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / r.low_freq_factor;
  const double high_freq_wavelen = old_context / r.high_freq_factor;
  for (double& inv : f->inv_freq) {
    const double wavelen = 2.0 * std::numbers::pi / inv;
    if (wavelen > low_freq_wavelen) {
      inv /= r.factor;
    } else if (wavelen >= high_freq_wavelen) {
      const double smooth =
          (old_context / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      inv = (1.0 - smooth) * inv / r.factor + smooth * inv;
    }
  }
}

}  // namespace

RopeFrequencies rope_frequencies(const ModelConfig& c) {
  const int64_t dim = c.rope_dim();
  RopeFrequencies f;
  f.inv_freq.resize(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    f.inv_freq[static_cast<size_t>(i)] =
        1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(dim));
  }
  const RopeScaling& r = c.rope_scaling;
  switch (r.type) {
    case RopeScaling::Type::kNone:
      break;
    case RopeScaling::Type::kLinear:
      for (double& inv : f.inv_freq) inv /= r.factor;
      break;
    case RopeScaling::Type::kYarn:
      apply_yarn(r, c.rope_theta, dim, &f);
      break;
    case RopeScaling::Type::kLlama3:
      apply_llama3(r, &f);
      break;
  }
  return f;
}

void rope_tables(const RopeFrequencies& freqs, int64_t pos0, int64_t n_tokens,
                 std::vector<float>* cos, std::vector<float>* sin) {
  const auto half = static_cast<int64_t>(freqs.inv_freq.size());
  const size_t n = static_cast<size_t>(n_tokens * half);
  if (cos->size() < n) cos->resize(n);
  if (sin->size() < n) sin->resize(n);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      // HF computes the angle in f32 (position * inv_freq); doing it in
      // double and rounding once differs by < 1 ulp at the positions we use.
      const double angle = static_cast<double>(pos0 + t) * freqs.inv_freq[static_cast<size_t>(i)];
      (*cos)[static_cast<size_t>(t * half + i)] =
          static_cast<float>(std::cos(angle) * freqs.attention_factor);
      (*sin)[static_cast<size_t>(t * half + i)] =
          static_cast<float>(std::sin(angle) * freqs.attention_factor);
    }
  }
}

float attention_softmax_scale(const ModelConfig& c) {
  const float plain = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (c.attention_scale_multiplier == 1.0) return plain;
  return static_cast<float>(c.attention_scale_multiplier /
                            std::sqrt(static_cast<double>(c.head_dim)));
}

}  // namespace dancemoe
