#include "scheduler/placement/policies/weighted_choice.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "scheduler/placement/coverage_solver.h"
#include "scheduler/placement/policies/node_room.h"

namespace dancemoe::placement {
namespace {

Result<NodeChoice> heuristic_unequal(const Problem& problem, const Capacity& capacity,
                                     const WeightedChoice& choice) {
  const ModelShape& model = problem.model;
  const auto& w = *choice.weight;
  NodeRoom room(problem, capacity);
  auto density = [&](size_t n, ExpertIndex x) {
    return w[n][x] / static_cast<double>(model.expert_bytes(x));
  };
  std::vector<ExpertIndex> order;
  for (size_t n = 0; n < room.n_nodes(); ++n) {
    order.clear();
    for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) {
      if (w[n][x] >= 0) order.push_back(x);
    }
    std::sort(order.begin(), order.end(), [&](ExpertIndex a, ExpertIndex b) {
      const double da = density(n, a), db = density(n, b);
      if (da != db) return da > db;
      if (choice.prefer != nullptr && (*choice.prefer)[n][a] != (*choice.prefer)[n][b]) {
        return (*choice.prefer)[n][a] > (*choice.prefer)[n][b];
      }
      if (choice.tie_key != nullptr && (*choice.tie_key)[a] != (*choice.tie_key)[b]) {
        return (*choice.tie_key)[a] > (*choice.tie_key)[b];
      }
      return a < b;
    });
    for (ExpertIndex x : order) {
      if (room.fits(n, x)) room.take(n, x);
    }
  }
  std::vector<ExpertIndex> uncovered;
  std::vector<double> best_weight(model.n_experts_total(),
                                  -std::numeric_limits<double>::infinity());
  for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) {
    if (room.copies(x) > 0) continue;
    uncovered.push_back(x);
    for (size_t n = 0; n < room.n_nodes(); ++n) best_weight[x] = std::max(best_weight[x], w[n][x]);
  }
  std::stable_sort(uncovered.begin(), uncovered.end(),
                   [&](ExpertIndex a, ExpertIndex b) { return best_weight[a] > best_weight[b]; });
  for (ExpertIndex x : uncovered) {
    // Cheapest room for x: on one device of one node, free bytes first, then
    // that device's replicas of least weight per byte.
    const uint64_t need = model.expert_bytes(x);
    double best_cost = std::numeric_limits<double>::infinity();
    int best = -1;
    std::vector<ExpertIndex> best_drop;
    for (size_t n = 0; n < room.n_nodes(); ++n) {
      if (room.holds(n, x)) continue;
      for (size_t g = 0; g < room.n_devices(n); ++g) {
        std::vector<ExpertIndex> replicas;
        for (ExpertIndex y : room.sets()[n]) {
          if (room.copies(y) >= 2 && room.device_of(n, y) == static_cast<int32_t>(g)) {
            replicas.push_back(y);
          }
        }
        std::sort(replicas.begin(), replicas.end(),
                  [&](ExpertIndex a, ExpertIndex b) { return density(n, a) < density(n, b); });
        uint64_t free = room.device_free(n, g);
        double cost = -w[n][x];
        std::vector<ExpertIndex> drop;
        for (size_t i = 0; i < replicas.size() && free < need; ++i) {
          free += model.expert_bytes(replicas[i]);
          cost += w[n][replicas[i]];
          drop.push_back(replicas[i]);
        }
        if (free >= need && cost < best_cost) {
          best_cost = cost;
          best = static_cast<int>(n);
          best_drop = std::move(drop);
        }
      }
    }
    if (best < 0 && take_somewhere(room, x).is_ok()) continue;
    if (best < 0) {
      return resource_exhausted("no node can make room for " + describe_expert(model, x) + " (" +
                                std::to_string(need) +
                                " bytes) on one device without uncovering another expert");
    }
    for (ExpertIndex y : best_drop) room.drop(best, y);
    room.take(best, x);
  }
  NodeChoice out;
  out.hints = room.hints();
  out.sets = room.release();
  return out;
}

}  // namespace

Result<Placement> place_by_weight(const Problem& problem, const WeightedChoice& choice) {
  const Capacity capacity = compute_capacity(problem.cluster, problem.model);
  if (capacity.slot_based) {
    CoverageInstance instance;
    instance.weight = choice.weight;
    instance.slots = capacity.node_slots;
    instance.prefer = choice.prefer;
    instance.tie_key = choice.tie_key;
    DMOE_ASSIGN_OR_RETURN(CoverageSolution solution, solve_coverage(instance));
    return pack_onto_devices(problem, capacity, solution.sets,
                             choice.label + ": exact min-cost flow (" +
                                 std::to_string(solution.n_deficits) + " coverage augmentations)");
  }
  Result<NodeChoice> chosen = heuristic_unequal(problem, capacity, choice);
  if (!chosen.is_ok()) {
    // Fragmentation defeated the repair: keep each node's preferences.
    NodeSets wanted(problem.cluster.nodes.size());
    for (size_t n = 0; n < wanted.size(); ++n) {
      for (ExpertIndex x = 0; x < problem.model.n_experts_total(); ++x) {
        if ((*choice.weight)[n][x] >= 0) wanted[n].push_back(x);
      }
      std::stable_sort(wanted[n].begin(), wanted[n].end(), [&](ExpertIndex a, ExpertIndex b) {
        return (*choice.weight)[n][a] / static_cast<double>(problem.model.expert_bytes(a)) >
               (*choice.weight)[n][b] / static_cast<double>(problem.model.expert_bytes(b));
      });
    }
    return fragmentation_fallback(problem, capacity, wanted, choice.label);
  }
  const NodeChoice& nodes = *chosen;
  return pack_onto_devices(problem, capacity, nodes.sets,
                           choice.label +
                               ": heuristic for unequal expert sizes (greedy by weight per byte, "
                               "cheapest coverage repair); not proven optimal",
                           &nodes.hints);
}

}  // namespace dancemoe::placement
