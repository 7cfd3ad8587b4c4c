// `smartmoe`: load-balanced placement without replication, after SmartMoE
// (Zhai et al., USENIX ATC'23), which places experts so that devices carry
// equal load. Adapted here: experts are taken heaviest first by global load
// (sum of f over nodes; ties by lower id); each goes to the node with the
// smallest load per byte of memory among those with room (so a node with
// twice the memory takes twice the load); ties (experts never activated) go
// to the node with the smaller share of its memory used, then to the node
// that uses the expert most, then the lower index. One copy per expert, spare memory empty,
// as in SmartMoE, which never replicates.
#include "scheduler/placement/policies/node_room.h"
#include "scheduler/placement/policies/policies.h"

namespace dancemoe::placement {

Result<Placement> place_smartmoe(const Problem& problem) {
  const Capacity capacity = compute_capacity(problem.cluster, problem.model);
  NodeRoom room(problem, capacity);
  const std::vector<double> total = global_counts(problem);
  const auto& f = problem.activations.counts;
  std::vector<double> load(room.n_nodes(), 0.0);
  for (ExpertIndex x : experts_by_global_count(problem)) {
    int best = -1;
    double best_ratio = 0.0, best_used = 0.0;
    for (size_t n = 0; n < room.n_nodes(); ++n) {
      if (!room.fits(n, x)) continue;
      const double cap = static_cast<double>(room.capacity_bytes(n));
      const double ratio = (load[n] + total[x]) / cap;
      const double used = 1.0 - static_cast<double>(room.free_bytes(n)) / cap;
      const bool better = best < 0 || ratio < best_ratio ||
                          (ratio == best_ratio &&
                           (used < best_used || (used == best_used && f[n][x] > f[best][x])));
      if (better) {
        best = static_cast<int>(n);
        best_ratio = ratio;
        best_used = used;
      }
    }
    if (best < 0) {
      // Fragmentation (unequal sizes only).
      if (!take_somewhere(room, x).is_ok()) {
        return fragmentation_fallback(problem, capacity, room.sets(), "smartmoe");
      }
      for (size_t n = 0; n < room.n_nodes(); ++n) {
        if (room.holds(n, x)) load[n] += total[x];
      }
      continue;
    }
    room.take(best, x);
    load[best] += total[x];
  }
  return pack_onto_devices(problem, capacity, room.sets(),
                           "smartmoe: one copy per expert, load balanced per byte of memory",
                           &room.hints());
}

}  // namespace dancemoe::placement
