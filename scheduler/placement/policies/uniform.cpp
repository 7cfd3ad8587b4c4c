// `uniform`: one copy of each expert, spread evenly over the nodes in
// proportion to their memory (classic expert parallelism). Activation
// statistics are not used and spare memory stays empty: the reference point
// for "no locality, no replication".
#include "scheduler/placement/policies/node_room.h"
#include "scheduler/placement/policies/policies.h"

namespace dancemoe::placement {

Result<Placement> place_uniform(const Problem& problem) {
  const Capacity capacity = compute_capacity(problem.cluster, problem.model);
  NodeRoom room(problem, capacity);
  if (!spread_once(room).is_ok()) {
    return fragmentation_fallback(problem, capacity, room.sets(), "uniform");
  }
  return pack_onto_devices(problem, capacity, room.sets(),
                           "uniform: one copy per expert, weighted round-robin", &room.hints());
}

}  // namespace dancemoe::placement
