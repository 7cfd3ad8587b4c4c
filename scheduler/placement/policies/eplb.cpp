// `eplb`: DeepSeek's Expert-Parallelism Load Balancer, adapted to nodes of
// unequal memory.
//   1. Replica counts: every expert starts with one replica; each spare slot
//      (bytes with unequal expert sizes) goes to the expert with the largest
//      load per replica, load = sum of f over nodes (ties: fewer replicas,
//      then lower id), at most one replica per node.
//   2. Packing: replicas, heaviest per-replica load first (ties: lower id),
//      each onto the least-loaded node that has room and lacks that expert.
//      "Least loaded" is load per byte of memory, so that a node with twice
//      the memory is filled to the same relative load (the adaptation to
//      unequal memory; EPLB proper assumes equal GPUs); ties go to the node
//      with the smaller share of its memory used, then the lower index.
// A replica that finds no node (all room left is on nodes that already hold
// that expert) is dropped. With unequal expert sizes every first copy is
// placed before any extra replica, so fragmentation can cost replicas but
// never coverage.
#include <algorithm>
#include <queue>
#include <tuple>

#include "scheduler/placement/policies/node_room.h"
#include "scheduler/placement/policies/policies.h"

namespace dancemoe::placement {
namespace {

struct Replica {
  ExpertIndex expert;
  double load;  // the expert's load divided by its replica count
  bool first;
};

std::vector<int32_t> replica_counts(const Problem& problem, const Capacity& capacity,
                                    const std::vector<double>& total) {
  const ModelShape& model = problem.model;
  const int32_t n_nodes = static_cast<int32_t>(problem.cluster.nodes.size());
  std::vector<int32_t> replicas(model.n_experts_total(), 1);
  uint64_t budget = 0;
  for (uint64_t bytes : capacity.node_bytes) budget += bytes;
  uint64_t spare = budget - model.total_expert_bytes();  // validated: budget covers all
  // Max-heap on (load per replica, fewer replicas, lower id).
  using Key = std::tuple<double, int32_t, ExpertIndex>;
  std::priority_queue<Key> heap;
  for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) heap.emplace(total[x], -1, -x);
  while (!heap.empty() && spare >= model.min_expert_bytes()) {
    const ExpertIndex x = -std::get<2>(heap.top());
    heap.pop();
    if (replicas[x] >= n_nodes || spare < model.expert_bytes(x)) continue;
    ++replicas[x];
    spare -= model.expert_bytes(x);
    heap.emplace(total[x] / replicas[x], -replicas[x], -x);
  }
  return replicas;
}

}  // namespace

Result<Placement> place_eplb(const Problem& problem) {
  const Capacity capacity = compute_capacity(problem.cluster, problem.model);
  NodeRoom room(problem, capacity);
  const std::vector<double> total = global_counts(problem);
  const std::vector<int32_t> replicas = replica_counts(problem, capacity, total);

  std::vector<Replica> order;
  for (ExpertIndex x = 0; x < problem.model.n_experts_total(); ++x) {
    for (int32_t r = 0; r < replicas[x]; ++r) order.push_back({x, total[x] / replicas[x], r == 0});
  }
  std::stable_sort(order.begin(), order.end(), [&](const Replica& a, const Replica& b) {
    if (!capacity.slot_based && a.first != b.first) return a.first;
    return a.load > b.load;
  });

  std::vector<double> load(room.n_nodes(), 0.0);
  for (const Replica& replica : order) {
    const ExpertIndex x = replica.expert;
    int best = -1;
    double best_ratio = 0.0, best_used = 0.0;
    for (size_t n = 0; n < room.n_nodes(); ++n) {
      if (!room.fits(n, x)) continue;
      const double cap = static_cast<double>(room.capacity_bytes(n));
      const double ratio = load[n] / cap;
      const double used = 1.0 - static_cast<double>(room.free_bytes(n)) / cap;
      if (best < 0 || ratio < best_ratio || (ratio == best_ratio && used < best_used)) {
        best = static_cast<int>(n);
        best_ratio = ratio;
        best_used = used;
      }
    }
    if (best < 0) {
      if (room.copies(x) == 0) {
        // Fragmentation (unequal sizes only).
        if (!take_somewhere(room, x).is_ok()) {
          return fragmentation_fallback(problem, capacity, room.sets(), "eplb");
        }
        for (size_t n = 0; n < room.n_nodes(); ++n) {
          if (room.holds(n, x)) load[n] += replica.load;
        }
      }
      continue;
    }
    room.take(best, x);
    load[best] += replica.load;
  }
  return pack_onto_devices(problem, capacity, room.sets(),
                           "eplb: replicas by load, heaviest first to the least-loaded node",
                           &room.hints());
}

}  // namespace dancemoe::placement
