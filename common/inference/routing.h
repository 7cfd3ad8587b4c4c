// Router decisions of one MoE layer: which k experts each token goes to and
// with what weight. Computing the decision (here) is separate from running
// the experts (MoeExecutor), which may run some of them on other machines.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "common/model/model_config.h"

namespace dancemoe {

struct RoutingDecision {
  int64_t n_tokens = 0;
  int64_t top_k = 0;
  std::vector<int32_t> expert_ids;  // [n_tokens, top_k], highest weight first
  std::vector<float> weights;       // [n_tokens, top_k]

  int32_t expert(int64_t token, int64_t k) const {
    return expert_ids[static_cast<size_t>(token * top_k + k)];
  }
  float weight(int64_t token, int64_t k) const {
    return weights[static_cast<size_t>(token * top_k + k)];
  }
};

// Sees every MoE layer's routing decision (activation counting, traces).
using RoutingObserver = std::function<void(int64_t layer, const RoutingDecision& routing)>;

// logits: [n_tokens, n_experts] router outputs in f32 (any router bias
// already added). Applies the model's scoring (RouterScoring), the
// group-limited choice (n_group / topk_group / group_score), the choice
// bias (choice_bias: [n_experts] or null; it steers which experts are
// chosen, never their weights), norm_topk_prob and routed_scaling_factor,
// as each family's published code does. Ties between equal scores go to
// the lower expert index, so decisions are deterministic.
void route_tokens(const ModelConfig& config, const float* logits, int64_t n_tokens,
                  const float* choice_bias, RoutingDecision* decision);
inline void route_tokens(const ModelConfig& config, const float* logits, int64_t n_tokens,
                         RoutingDecision* decision) {
  route_tokens(config, logits, n_tokens, nullptr, decision);
}

}  // namespace dancemoe
