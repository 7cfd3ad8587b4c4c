#include "common/generation/sampler.h"

#include <algorithm>
#include <cmath>

namespace dancemoe {

Status SamplingParams::validate() const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    return invalid_argument("temperature must be a finite number >= 0, got " +
                            std::to_string(temperature));
  }
  if (top_k < 0) return invalid_argument("top_k must be >= 0, got " + std::to_string(top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return invalid_argument("top_p must be in (0, 1], got " + std::to_string(top_p));
  }
  return Status::ok();
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

int32_t Sampler::sample(std::span<const float> logits) {
  const int32_t n = static_cast<int32_t>(logits.size());
  if (params_.temperature == 0.0f) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  candidates_.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i)
    candidates_[static_cast<size_t>(i)] = {logits[static_cast<size_t>(i)], i};
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<long>(keep),
                      candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  candidates_.resize(keep);
  const float max_logit = candidates_[0].first;
  double total = 0.0;
  for (auto& [value, id] : candidates_) {
    value = std::exp((value - max_logit) / params_.temperature);
    total += value;
  }
  if (params_.top_p < 1.0f) {
    double cumulative = 0.0;
    size_t cut = candidates_.size();
    for (size_t i = 0; i < candidates_.size(); ++i) {
      cumulative += candidates_[i].first / total;
      if (cumulative >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
    candidates_.resize(cut);
    total = 0.0;
    for (const auto& c : candidates_) total += c.first;
  }
  std::uniform_real_distribution<double> uniform(0.0, total);
  double r = uniform(rng_);
  for (const auto& [weight, id] : candidates_) {
    r -= weight;
    if (r <= 0.0) return id;
  }
  return candidates_.back().second;
}

}  // namespace dancemoe
