// `optimal-migration`: the solver itself trades benefit against migration.
// The weight of node n holding expert x is, in seconds over the horizon,
//   w[n][x] = f[n][x] / window_s * H * delta[n]        (remote latency saved)
//           - [x not on n now] * bytes(x) / speed(n)     (time to load it)
// so maximising the total weight minimises C(P') + T_mig(P, P'), the left
// side of the gate, and the result passes the gate whenever any placement
// does (up to the packing approximation below). An expert whose saving does
// not pay for its load is not added unless coverage needs it.
//
// speed(n) is the slot-weighted mean load bandwidth of n's devices
// (node_load_bytes_per_s): the solver chooses per node and the device is
// picked by packing afterwards, so with devices of different speeds T_mig is
// estimated here and computed exactly by the gate. With no current placement every expert must be
// loaded anyway, so the load term is left out (a fresh start), and the result is `optimal` weighted
// by each node's remote penalty.
#include "scheduler/placement/policies/node_room.h"
#include "scheduler/placement/policies/policies.h"
#include "scheduler/placement/policies/weighted_choice.h"
#include "scheduler/placement/validate.h"

namespace dancemoe::placement {

Result<Placement> place_optimal_migration(const Problem& problem) {
  const ModelShape& model = problem.model;
  const Capacity capacity = compute_capacity(problem.cluster, model);
  const double scale = problem.horizon_s / problem.activations.window_s;
  std::vector<std::vector<uint8_t>> held;
  if (problem.current) held = node_holdings(*problem.current, model.n_experts_total());
  std::vector<std::vector<double>> weight(problem.cluster.nodes.size());
  for (size_t n = 0; n < weight.size(); ++n) {
    const Node& node = problem.cluster.nodes[n];
    const double speed = node_load_bytes_per_s(problem, capacity, n);
    const std::vector<double>& f = problem.activations.counts[n];
    weight[n].resize(model.n_experts_total());
    for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) {
      double w = f[x] * scale * node.remote_penalty_s;
      if (problem.current && !held[n][x]) w -= static_cast<double>(model.expert_bytes(x)) / speed;
      weight[n][x] = w;
    }
  }
  const std::vector<double> popularity = global_counts(problem);
  WeightedChoice choice;
  choice.weight = &weight;
  choice.tie_key = &popularity;
  if (problem.current) choice.prefer = &held;
  choice.label = "optimal-migration";
  return place_by_weight(problem, choice);
}

}  // namespace dancemoe::placement
