#include "scheduler/placement/policies/node_room.h"

#include <algorithm>
#include <numeric>

namespace dancemoe::placement {

NodeRoom::NodeRoom(const Problem& problem, const Capacity& capacity)
    : model_(&problem.model),
      capacity_bytes_(capacity.node_bytes),
      free_bytes_(capacity.node_bytes),
      holds_(problem.cluster.nodes.size(),
             std::vector<uint8_t>(problem.model.n_experts_total(), 0)),
      copies_(problem.model.n_experts_total(), 0),
      sets_(problem.cluster.nodes.size()) {}

bool NodeRoom::fits(size_t n, ExpertId x) const {
  return !holds_[n][x] && free_bytes_[n] >= model_->expert_bytes(x);
}

void NodeRoom::take(size_t n, ExpertId x) {
  holds_[n][x] = 1;
  free_bytes_[n] -= model_->expert_bytes(x);
  ++copies_[x];
  sets_[n].push_back(x);
}

void NodeRoom::drop(size_t n, ExpertId x) {
  holds_[n][x] = 0;
  free_bytes_[n] += model_->expert_bytes(x);
  --copies_[x];
  std::vector<ExpertId>& set = sets_[n];
  set.erase(std::find(set.begin(), set.end(), x));
}

std::vector<double> global_counts(const Problem& problem) {
  std::vector<double> total(problem.model.n_experts_total(), 0.0);
  for (const std::vector<double>& row : problem.activations.counts) {
    for (size_t x = 0; x < total.size(); ++x) total[x] += row[x];
  }
  return total;
}

std::vector<ExpertId> experts_by_global_count(const Problem& problem) {
  const std::vector<double> total = global_counts(problem);
  std::vector<ExpertId> order(total.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](ExpertId a, ExpertId b) { return total[a] > total[b]; });
  return order;
}

Status spread_once(NodeRoom& room) {
  const size_t n_nodes = room.n_nodes();
  std::vector<double> weight(n_nodes), current(n_nodes, 0.0);
  double weight_sum = 0.0;
  for (size_t n = 0; n < n_nodes; ++n) {
    weight[n] = static_cast<double>(room.capacity_bytes(n));
    weight_sum += weight[n];
  }
  for (ExpertId x = 0; x < room.n_experts_total(); ++x) {
    // Smooth weighted round-robin (every node gains its weight, the chosen
    // one pays the sum): deterministic and evenly interleaved.
    int best = -1;
    for (size_t n = 0; n < n_nodes; ++n) {
      current[n] += weight[n];
      if (room.fits(n, x) && (best < 0 || current[n] > current[best])) best = static_cast<int>(n);
    }
    if (best < 0) {
      return resource_exhausted("could not give every expert one copy: no node has room left for " +
                                describe_expert(room.model(), x) + " (memory too fragmented)");
    }
    current[best] -= weight_sum;
    room.take(best, x);
  }
  return Status::ok();
}

}  // namespace dancemoe::placement
