#include "scheduler/placement/costs.h"

#include <algorithm>

#include "scheduler/placement/step_model.h"

namespace dancemoe::placement {
namespace {

// Sorted-list difference: ids in `to` that are not in `from`, visited in order.
template <typename Fn>
void for_each_added(const std::vector<ExpertIndex>& from, const std::vector<ExpertIndex>& to,
                    Fn fn) {
  size_t i = 0;
  for (ExpertIndex x : to) {
    while (i < from.size() && from[i] < x) ++i;
    if (i < from.size() && from[i] == x) continue;
    fn(x);
  }
}

const std::vector<ExpertIndex>& device_list(const Placement& placement, size_t n, size_t g) {
  static const std::vector<ExpertIndex> kEmpty;
  if (n >= placement.experts.size() || g >= placement.experts[n].size()) return kEmpty;
  return placement.experts[n][g];
}

}  // namespace

PlacementCosts evaluate_costs(const Problem& problem, const Placement& placement) {
  PlacementCosts costs;
  const int32_t n_total = problem.model.n_experts_total();
  const auto holds = node_holdings(placement, n_total);
  const double scale = problem.horizon_s / problem.activations.window_s;
  for (size_t n = 0; n < problem.cluster.nodes.size(); ++n) {
    const std::vector<double>& f = problem.activations.counts[n];
    double remote = 0.0;
    for (ExpertIndex x = 0; x < n_total; ++x) {
      costs.total_activations += f[x];
      if (n >= holds.size() || !holds[n][x]) remote += f[x];
    }
    costs.proxy_cost += remote;
    costs.proxy_cost_s += remote * scale * problem.cluster.nodes[n].remote_penalty_s;
  }
  costs.local_hit_ratio =
      costs.total_activations > 0 ? 1.0 - costs.proxy_cost / costs.total_activations : 1.0;
  return costs;
}

double proxy_cost_activations(const Problem& problem, const Placement& placement) {
  return evaluate_costs(problem, placement).proxy_cost;
}

double proxy_cost_s(const Problem& problem, const Placement& placement) {
  return evaluate_costs(problem, placement).proxy_cost_s;
}

double local_hit_ratio(const Problem& problem, const Placement& placement) {
  return evaluate_costs(problem, placement).local_hit_ratio;
}

double migration_s(const Problem& problem, const Placement& from, const Placement& to) {
  double seconds = 0.0;
  for (size_t n = 0; n < to.experts.size() && n < problem.cluster.nodes.size(); ++n) {
    const Node& node = problem.cluster.nodes[n];
    for (size_t g = 0; g < to.experts[n].size() && g < node.devices.size(); ++g) {
      const double speed = node.devices[g].load_bytes_per_s;
      for_each_added(device_list(from, n, g), to.experts[n][g], [&](ExpertIndex x) {
        seconds += static_cast<double>(problem.model.expert_bytes(x)) / speed;
      });
    }
  }
  return seconds;
}

uint64_t migration_bytes(const Problem& problem, const Placement& from, const Placement& to) {
  uint64_t bytes = 0;
  for (size_t n = 0; n < to.experts.size(); ++n) {
    for (size_t g = 0; g < to.experts[n].size(); ++g) {
      for_each_added(device_list(from, n, g), to.experts[n][g],
                     [&](ExpertIndex x) { bytes += problem.model.expert_bytes(x); });
    }
  }
  return bytes;
}

double objective_cost_s(const Problem& problem, const Placement& placement, Objective objective) {
  if (objective == Objective::kLatency) {
    Result<StepModel> steps = StepModel::create(problem);
    if (steps.is_ok()) return evaluate_steps(problem, *steps, placement).cost_s;
  }
  return proxy_cost_s(problem, placement);
}

GateDecision evaluate_gate(const Problem& problem, const Placement& current,
                           const Placement& proposed, Objective objective) {
  GateDecision gate;
  gate.cost_current_s = objective_cost_s(problem, current, objective);
  gate.cost_new_s = objective_cost_s(problem, proposed, objective);
  gate.migration_s = migration_s(problem, current, proposed);
  const int32_t n_total = problem.model.n_experts_total();
  std::vector<uint8_t> covered(n_total, 0);
  for (const auto& node : current.experts) {
    for (const auto& device : node) {
      for (ExpertIndex x : device) {
        if (x >= 0 && x < n_total) covered[x] = 1;
      }
    }
  }
  gate.coverage_repair = std::find(covered.begin(), covered.end(), 0) != covered.end();
  gate.adopt = gate.coverage_repair || gate.cost_new_s + gate.migration_s < gate.cost_current_s;
  return gate;
}

}  // namespace dancemoe::placement
