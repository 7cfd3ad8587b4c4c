#include "common/generation/logprobs.h"

#include <algorithm>
#include <cmath>

namespace dancemoe {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, int32_t n_top) {
  TokenLogprobs out;
  out.id = chosen;
  if (logits.empty()) return out;
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  // In double: log_z may be large (logits of 1000) while the result is small.
  const double log_z = max_logit + std::log(sum);
  auto logprob = [&](size_t id) { return static_cast<float>(logits[id] - log_z); };
  if (chosen >= 0 && static_cast<size_t>(chosen) < logits.size()) {
    out.logprob = logprob(static_cast<size_t>(chosen));
  }
  const size_t k = std::min(static_cast<size_t>(std::max(n_top, 0)), logits.size());
  if (k == 0) return out;
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  auto more_likely = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la != lb ? la > lb : a < b;
  };
  std::partial_sort(ids.begin(), ids.begin() + static_cast<long>(k), ids.end(), more_likely);
  for (size_t i = 0; i < k; ++i) {
    out.top.push_back({ids[i], logprob(static_cast<size_t>(ids[i]))});
  }
  return out;
}

}  // namespace dancemoe
