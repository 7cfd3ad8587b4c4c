#include "common/inference/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dancemoe {
namespace {

// Indices of the k largest values, largest first, lower index on ties.
void top_k_indices(const float* values, int64_t n, int64_t k, std::vector<int32_t>* order) {
  order->resize(static_cast<size_t>(n));
  std::iota(order->begin(), order->end(), 0);
  std::partial_sort(order->begin(), order->begin() + k, order->end(), [&](int32_t a, int32_t b) {
    return values[a] != values[b] ? values[a] > values[b] : a < b;
  });
}

}  // namespace

void route_tokens(const ModelConfig& c, const float* logits, int64_t n_tokens, RoutingDecision* d) {
  const int64_t n_experts = c.n_experts;
  const int64_t k = c.n_experts_per_token;
  d->n_tokens = n_tokens;
  d->top_k = k;
  d->expert_ids.resize(static_cast<size_t>(n_tokens * k));
  d->weights.resize(static_cast<size_t>(n_tokens * k));
  std::vector<float> probs(static_cast<size_t>(n_experts));
  std::vector<int32_t> order;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = logits + t * n_experts;
    int32_t* ids = d->expert_ids.data() + t * k;
    float* w = d->weights.data() + t * k;
    if (c.router_scoring == RouterScoring::kSoftmaxThenTopK) {
      const float max_logit = *std::max_element(row, row + n_experts);
      float sum = 0.0f;
      for (int64_t e = 0; e < n_experts; ++e) {
        probs[static_cast<size_t>(e)] = std::exp(row[e] - max_logit);
        sum += probs[static_cast<size_t>(e)];
      }
      for (float& p : probs) p /= sum;
      top_k_indices(probs.data(), n_experts, k, &order);
      float kept = 0.0f;
      for (int64_t i = 0; i < k; ++i) {
        ids[i] = order[static_cast<size_t>(i)];
        w[i] = probs[static_cast<size_t>(ids[i])];
        kept += w[i];
      }
      if (c.norm_topk_prob) {
        for (int64_t i = 0; i < k; ++i) w[i] /= kept;
      }
    } else {  // kTopKThenSoftmax
      top_k_indices(row, n_experts, k, &order);
      const float max_logit = row[order[0]];
      float sum = 0.0f;
      for (int64_t i = 0; i < k; ++i) {
        ids[i] = order[static_cast<size_t>(i)];
        w[i] = std::exp(row[ids[i]] - max_logit);
        sum += w[i];
      }
      for (int64_t i = 0; i < k; ++i) w[i] /= sum;
    }
  }
}

}  // namespace dancemoe
