// Algorithm 2 of the paper (top-N per layer, then coverage repair) and the
// `dancemoe` policy entry point. Every resolved ambiguity is listed in
// dancemoe.h.
#include "scheduler/placement/policies/dancemoe.h"

#include <algorithm>
#include <numeric>

#include "scheduler/placement/policies/node_room.h"
#include "scheduler/placement/policies/policies.h"

namespace dancemoe::placement {
namespace {

// Working view of Algorithm 2: the room plus, per node and layer, the experts held.
struct Assignment {
  Assignment(const Problem& problem, const Capacity& capacity)
      : room(problem, capacity),
        held(problem.cluster.nodes.size(),
             std::vector<std::vector<ExpertIndex>>(problem.model.n_layers())) {}

  void take(size_t n, ExpertIndex x, int32_t layer) {
    room.take(n, x);
    held[n][layer].push_back(x);
  }
  void drop(size_t n, ExpertIndex x, int32_t layer) {
    room.drop(n, x);
    auto& list = held[n][layer];
    list.erase(std::find(list.begin(), list.end(), x));
  }
  // Rebuilds the per-layer lists after the room changed behind our back.
  void resync() {
    for (size_t n = 0; n < held.size(); ++n) {
      for (auto& list : held[n]) list.clear();
      for (ExpertIndex x : room.sets()[n]) held[n][room.model().layer_of(x)].push_back(x);
    }
  }
  int64_t duplicates(size_t n, int32_t layer) const {
    int64_t d = 0;
    for (ExpertIndex y : held[n][layer]) d += room.copies(y) >= 2 ? 1 : 0;
    return d;
  }

  NodeRoom room;
  std::vector<std::vector<std::vector<ExpertIndex>>> held;  // [node][layer]
};

// Least-used duplicate of node n among `candidates`; -1 if none.
ExpertIndex least_used_duplicate(const Assignment& a, const std::vector<double>& f,
                                 const std::vector<double>& global,
                                 const std::vector<ExpertIndex>& candidates) {
  ExpertIndex best = -1;
  for (ExpertIndex y : candidates) {
    if (a.room.copies(y) < 2) continue;
    if (best < 0 || f[y] < f[best] || (f[y] == f[best] && global[y] < global[best]) ||
        (f[y] == f[best] && global[y] == global[best] && y > best)) {
      best = y;
    }
  }
  return best;
}

// Unequal sizes only: x replaces duplicates of any layer (dancemoe.h), all
// taken from one device so that x then fits there.
Status repair_across_layers(const Problem& problem, Assignment& a,
                            const std::vector<double>& global, ExpertIndex x) {
  const ModelShape& model = problem.model;
  const auto& f = problem.activations.counts;
  const uint64_t need = model.expert_bytes(x);
  int best = -1;
  int64_t best_dups = 0;
  std::vector<ExpertIndex> best_drops;
  for (size_t n = 0; n < a.room.n_nodes(); ++n) {
    if (a.room.holds(n, x)) continue;
    int64_t dups = 0;
    for (ExpertIndex y : a.room.sets()[n]) dups += a.room.copies(y) >= 2 ? 1 : 0;
    // The device of n that needs the fewest least-used duplicates dropped.
    std::vector<ExpertIndex> drops;
    bool found = false;
    for (size_t g = 0; g < a.room.n_devices(n); ++g) {
      std::vector<ExpertIndex> on_device;
      for (ExpertIndex y : a.room.sets()[n]) {
        if (a.room.device_of(n, y) == static_cast<int32_t>(g)) on_device.push_back(y);
      }
      uint64_t room = a.room.device_free(n, g);
      std::vector<ExpertIndex> taken;
      while (room < need) {
        const ExpertIndex y = least_used_duplicate(a, f[n], global, on_device);
        if (y < 0) break;
        on_device.erase(std::find(on_device.begin(), on_device.end(), y));
        taken.push_back(y);
        room += model.expert_bytes(y);
      }
      if (room >= need && (!found || taken.size() < drops.size())) {
        found = true;
        drops = taken;
      }
    }
    if (!found) continue;
    if (best < 0 || dups < best_dups || (dups == best_dups && f[n][x] > f[best][x])) {
      best = static_cast<int>(n);
      best_dups = dups;
      best_drops = drops;
    }
  }
  if (best < 0) {
    // Not even that: move one expert between devices to make room.
    DMOE_RETURN_IF_ERROR(take_somewhere(a.room, x));
    a.resync();
    return Status::ok();
  }
  for (ExpertIndex y : best_drops) a.drop(best, y, model.layer_of(y));
  a.take(best, x, model.layer_of(x));
  return Status::ok();
}

// Each node's top-N[n][l] experts of every layer by frequency (ties: global
// count, then id), largest first so that unequal sizes fragment the devices
// least.
NodeSets top_n_picks(const Problem& problem, const DancemoeCounts& counts) {
  const ModelShape& model = problem.model;
  const auto& f = problem.activations.counts;
  const std::vector<double> global = global_counts(problem);
  NodeSets picks(problem.cluster.nodes.size());
  std::vector<ExpertIndex> order;
  for (size_t n = 0; n < picks.size(); ++n) {
    for (int32_t l = 0; l < model.n_layers(); ++l) {
      order.resize(model.n_experts(l));
      std::iota(order.begin(), order.end(), model.offset(l));
      std::stable_sort(order.begin(), order.end(), [&](ExpertIndex x, ExpertIndex y) {
        return f[n][x] != f[n][y] ? f[n][x] > f[n][y] : global[x] > global[y];
      });
      const int64_t take = std::min<int64_t>(counts.counts[n][l], model.n_experts(l));
      picks[n].insert(picks[n].end(), order.begin(), order.begin() + take);
    }
    std::stable_sort(picks[n].begin(), picks[n].end(), [&](ExpertIndex x, ExpertIndex y) {
      return model.expert_bytes(x) > model.expert_bytes(y);
    });
  }
  return picks;
}

}  // namespace

Result<NodeChoice> dancemoe_assign(const Problem& problem, const Capacity& capacity,
                                   const DancemoeCounts& counts) {
  const ModelShape& model = problem.model;
  const auto& f = problem.activations.counts;
  const std::vector<double> global = global_counts(problem);
  Assignment a(problem, capacity);
  const NodeSets picks = top_n_picks(problem, counts);
  for (size_t n = 0; n < a.room.n_nodes(); ++n) {
    for (ExpertIndex x : picks[n]) {
      if (a.room.fits(n, x)) a.take(n, x, model.layer_of(x));
    }
  }
  std::vector<ExpertIndex> uncovered;
  for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) {
    if (a.room.copies(x) == 0) uncovered.push_back(x);
  }
  std::stable_sort(uncovered.begin(), uncovered.end(), [&](ExpertIndex x, ExpertIndex y) {
    if (model.layer_of(x) != model.layer_of(y)) return model.layer_of(x) < model.layer_of(y);
    return global[x] > global[y];
  });
  for (ExpertIndex x : uncovered) {
    const int32_t l = model.layer_of(x);
    int best = -1;
    int64_t best_dups = 0;
    for (size_t n = 0; n < a.room.n_nodes(); ++n) {
      const int64_t dups = a.duplicates(n, l);
      if (dups == 0) continue;
      if (best < 0 || dups < best_dups || (dups == best_dups && f[n][x] > f[best][x])) {
        best = static_cast<int>(n);
        best_dups = dups;
      }
    }
    if (best < 0) {
      DMOE_RETURN_IF_ERROR(repair_across_layers(problem, a, global, x));
      continue;
    }
    const ExpertIndex y = least_used_duplicate(a, f[best], global, a.held[best][l]);
    a.drop(best, y, l);
    a.take(best, x, l);
  }
  NodeChoice choice;
  choice.hints = a.room.hints();
  choice.sets = a.room.release();
  return choice;
}

Result<Placement> place_dancemoe(const Problem& problem) {
  const Capacity capacity = compute_capacity(problem.cluster, problem.model);
  const DancemoeCounts counts = dancemoe_layer_counts(problem, capacity);
  Result<NodeChoice> assigned = dancemoe_assign(problem, capacity, counts);
  if (!assigned.is_ok()) {
    if (capacity.slot_based) return assigned.status();
    return fragmentation_fallback(problem, capacity, top_n_picks(problem, counts), "dancemoe");
  }
  const NodeChoice& choice = *assigned;
  return pack_onto_devices(problem, capacity, choice.sets,
                           "dancemoe: entropy-based layer counts (Algorithm 1), top-N with "
                           "coverage repair (Algorithm 2)",
                           &choice.hints);
}

}  // namespace dancemoe::placement
