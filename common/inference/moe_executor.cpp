#include "common/inference/moe_executor.h"

namespace dancemoe {

void group_by_expert(const RoutingDecision& routing, int64_t n_experts,
                     std::vector<ExpertJob>* jobs_by_expert) {
  jobs_by_expert->resize(static_cast<size_t>(n_experts));
  for (ExpertJob& job : *jobs_by_expert) {
    job.tokens.clear();
    job.weights.clear();
  }
  for (int64_t t = 0; t < routing.n_tokens; ++t) {
    for (int64_t k = 0; k < routing.top_k; ++k) {
      ExpertJob& job = (*jobs_by_expert)[static_cast<size_t>(routing.expert(t, k))];
      job.tokens.push_back(static_cast<int32_t>(t));
      job.weights.push_back(routing.weight(t, k));
    }
  }
}

LocalMoeExecutor::LocalMoeExecutor(const ExpertStore& store, ExpertComputer& computer,
                                   int64_t n_experts)
    : store_(store), computer_(computer), n_experts_(n_experts) {}

Status LocalMoeExecutor::run_layer(int64_t layer, const float* x, int64_t n_tokens, int64_t hidden,
                                   const RoutingDecision& routing, float* out) {
  group_by_expert(routing, n_experts_, &by_expert_);
  // jobs_ keeps its element buffers between calls, so steady-state decoding
  // reuses their capacity instead of allocating.
  size_t n_jobs = 0;
  pinned_.clear();
  for (int64_t e = 0; e < n_experts_; ++e) {
    ExpertJob& source = by_expert_[static_cast<size_t>(e)];
    if (source.tokens.empty()) continue;
    std::shared_ptr<const ExpertWeights> weights =
        store_.get({static_cast<int32_t>(layer), static_cast<int32_t>(e)});
    if (weights == nullptr) {
      return failed_precondition("expert " + std::to_string(e) + " of layer " +
                                 std::to_string(layer) +
                                 " is not resident on this node (no remote peers configured)");
    }
    if (jobs_.size() <= n_jobs) jobs_.emplace_back();
    ExpertJob& job = jobs_[n_jobs++];
    assign_expert(*weights, &job);
    job.tokens.swap(source.tokens);
    job.weights.swap(source.weights);
    pinned_.push_back(std::move(weights));
  }
  computer_.run(std::span<const ExpertJob>(jobs_.data(), n_jobs), x, n_tokens, hidden, out);
  pinned_.clear();
  return Status::ok();
}

}  // namespace dancemoe
