// MoeExecutor: where the experts a layer's router chose are computed. The
// forward pass decides routing, then hands the decision to an executor.
// LocalMoeExecutor computes every expert from this process's ExpertStore;
// the node agent's distributed executor sends some of them to peers and
// overlaps that with the local ones.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/base/status.h"
#include "common/inference/expert_compute.h"
#include "common/inference/expert_store.h"
#include "common/inference/routing.h"

namespace dancemoe {

class MoeExecutor {
 public:
  virtual ~MoeExecutor() = default;

  // x: [n_tokens, hidden] (the normalised hidden states). Adds
  // sum_k w[t,k] * expert_{id[t,k]}(x[t]) into out: [n_tokens, hidden] (the
  // forward pass passes its residual stream, so no separate add is needed).
  virtual Status run_layer(int64_t layer, const float* x, int64_t n_tokens, int64_t hidden,
                           const RoutingDecision& routing, float* out) = 0;
};

// Groups a layer's (token, expert) pairs by expert. `jobs_by_expert` is
// resized to n_experts; experts nobody chose get empty token lists.
void group_by_expert(const RoutingDecision& routing, int64_t n_experts,
                     std::vector<ExpertJob>* jobs_by_expert);

// Computes every chosen expert here. A chosen expert that is not resident is
// a failed_precondition error naming it (the node agent makes it remote).
// Not thread-safe (one per forward context).
class LocalMoeExecutor final : public MoeExecutor {
 public:
  LocalMoeExecutor(const ExpertStore& store, ExpertComputer& computer, int64_t n_experts);

  Status run_layer(int64_t layer, const float* x, int64_t n_tokens, int64_t hidden,
                   const RoutingDecision& routing, float* out) override;

 private:
  const ExpertStore& store_;
  ExpertComputer& computer_;
  int64_t n_experts_;
  std::vector<ExpertJob> by_expert_;
  std::vector<ExpertJob> jobs_;
  std::vector<std::shared_ptr<const ExpertWeights>> pinned_;
};

}  // namespace dancemoe
