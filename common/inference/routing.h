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

// logits: [n_tokens, n_experts] router outputs in f32. Applies the model's
// scoring order (RouterScoring) and norm_topk_prob. Ties between equal
// scores go to the lower expert index, so decisions are deterministic.
void route_tokens(const ModelConfig& config, const float* logits, int64_t n_tokens,
                  RoutingDecision* decision);

}  // namespace dancemoe
