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

// Group-limited choice (DeepSeek-V2's group_limited_greedy, V3's noaux_tc):
// the experts are n_group consecutive groups; each group is scored (its
// best expert, or the sum of its best two); the experts outside the
// topk_group best groups get a choice score of 0 -- as the published code
// masks them (masked_fill with 0.0), not -inf.
void limit_to_groups(const ModelConfig& c, float* choice, std::vector<float>* group_scores,
                     std::vector<int32_t>* order) {
  const int64_t per_group = c.n_experts / c.n_group;
  group_scores->resize(static_cast<size_t>(c.n_group));
  for (int64_t g = 0; g < c.n_group; ++g) {
    const float* first = choice + g * per_group;
    float best = -INFINITY, second = -INFINITY;
    for (int64_t i = 0; i < per_group; ++i) {
      if (first[i] > best) {
        second = best;
        best = first[i];
      } else if (first[i] > second) {
        second = first[i];
      }
    }
    (*group_scores)[static_cast<size_t>(g)] =
        c.group_score == GroupScore::kMax || per_group < 2 ? best : best + second;
  }
  top_k_indices(group_scores->data(), c.n_group, c.topk_group, order);
  std::vector<char> kept(static_cast<size_t>(c.n_group), 0);
  for (int64_t i = 0; i < c.topk_group; ++i) kept[static_cast<size_t>((*order)[i])] = 1;
  for (int64_t g = 0; g < c.n_group; ++g) {
    if (kept[static_cast<size_t>(g)]) continue;
    std::fill(choice + g * per_group, choice + (g + 1) * per_group, 0.0f);
  }
}

}  // namespace

void route_tokens(const ModelConfig& c, const float* logits, int64_t n_tokens,
                  const float* choice_bias, RoutingDecision* d) {
  const int64_t n_experts = c.n_experts;
  const int64_t k = c.n_experts_per_token;
  d->n_tokens = n_tokens;
  d->top_k = k;
  d->expert_ids.resize(static_cast<size_t>(n_tokens * k));
  d->weights.resize(static_cast<size_t>(n_tokens * k));
  std::vector<float> probs(static_cast<size_t>(n_experts));
  std::vector<float> choice(static_cast<size_t>(n_experts));
  std::vector<float> group_scores;
  std::vector<int32_t> order;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = logits + t * n_experts;
    int32_t* ids = d->expert_ids.data() + t * k;
    float* w = d->weights.data() + t * k;
    if (c.router_scoring == RouterScoring::kTopKThenSoftmax) {
      top_k_indices(row, n_experts, k, &order);
      const float max_logit = row[order[0]];
      float sum = 0.0f;
      for (int64_t i = 0; i < k; ++i) {
        ids[i] = order[static_cast<size_t>(i)];
        w[i] = std::exp(row[ids[i]] - max_logit);
        sum += w[i];
      }
      for (int64_t i = 0; i < k; ++i) w[i] /= sum;
      continue;
    }
    if (c.router_scoring == RouterScoring::kSoftmaxThenTopK) {
      const float max_logit = *std::max_element(row, row + n_experts);
      float sum = 0.0f;
      for (int64_t e = 0; e < n_experts; ++e) {
        probs[static_cast<size_t>(e)] = std::exp(row[e] - max_logit);
        sum += probs[static_cast<size_t>(e)];
      }
      for (float& p : probs) p /= sum;
    } else {  // kSigmoid
      for (int64_t e = 0; e < n_experts; ++e) {
        probs[static_cast<size_t>(e)] = 1.0f / (1.0f + std::exp(-row[e]));
      }
    }
    for (int64_t e = 0; e < n_experts; ++e) {
      choice[static_cast<size_t>(e)] =
          probs[static_cast<size_t>(e)] + (choice_bias != nullptr ? choice_bias[e] : 0.0f);
    }
    if (c.n_group > 1) limit_to_groups(c, choice.data(), &group_scores, &order);
    top_k_indices(choice.data(), n_experts, k, &order);
    float kept = 0.0f;
    for (int64_t i = 0; i < k; ++i) {
      ids[i] = order[static_cast<size_t>(i)];
      w[i] = probs[static_cast<size_t>(ids[i])];
      kept += w[i];
    }
    if (c.norm_topk_prob) {
      for (int64_t i = 0; i < k; ++i) w[i] /= kept + c.topk_norm_epsilon;
    }
    if (c.routed_scaling_factor != 1.0) {
      const auto scale = static_cast<float>(c.routed_scaling_factor);
      for (int64_t i = 0; i < k; ++i) w[i] *= scale;
    }
  }
}

}  // namespace dancemoe
