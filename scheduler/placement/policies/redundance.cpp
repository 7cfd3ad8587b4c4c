// `redundance`: replication by global popularity. Every expert first gets one
// copy as in `uniform`; then each node fills its spare memory with the most
// used experts of the whole cluster (sum of f over nodes; ties by lower id),
// skipping those it already holds. Every node thus replicates the same hot
// set: activation-aware but blind to what each node's own workload uses,
// which is exactly what per-node policies (dancemoe, optimal) add.
#include "scheduler/placement/policies/node_room.h"
#include "scheduler/placement/policies/policies.h"

namespace dancemoe::placement {

Result<Placement> place_redundance(const Problem& problem) {
  const Capacity capacity = compute_capacity(problem.cluster, problem.model);
  NodeRoom room(problem, capacity);
  const std::vector<ExpertIndex> order = experts_by_global_count(problem);
  if (!spread_once(room).is_ok()) {
    return fragmentation_fallback(problem, capacity, NodeSets(room.n_nodes(), order), "redundance");
  }
  for (size_t n = 0; n < room.n_nodes(); ++n) {
    for (ExpertIndex x : order) {
      if (room.free_bytes(n) < problem.model.min_expert_bytes()) break;
      if (room.fits(n, x)) room.take(n, x);
    }
  }
  return pack_onto_devices(problem, capacity, room.sets(),
                           "redundance: uniform copy, spare memory filled by global popularity",
                           &room.hints());
}

}  // namespace dancemoe::placement
