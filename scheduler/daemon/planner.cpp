#include "scheduler/daemon/planner.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>

#include "scheduler/daemon/expert_sources.h"
#include "scheduler/placement/policy.h"
#include "scheduler/placement/validate.h"

namespace dancemoe::scheduler {
namespace {

using placement::ExpertIndex;

std::optional<double> measured_delta_s(const store::NodeTotals& t) {
  const auto local = t.local_mean_us();
  const auto remote = t.remote_mean_us();
  if (!local || !remote) return std::nullopt;
  return std::max(0.0, (*remote - *local) * 1e-6);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Can the node's devices hold at least one expert of the model?
bool can_hold_an_expert(const Member& m, const ModelInfo& model) {
  const uint64_t smallest = model.shape.min_expert_bytes();
  for (const store::DeviceRecord& d : m.record.devices) {
    if (d.expert_budget_bytes >= smallest) return true;
  }
  return false;
}

void assign_deltas(const PlanInputs& inputs, const PlannerOptions& options, PlanProblem* plan) {
  std::vector<double> measured;
  std::vector<std::optional<double>> per_node(plan->placed.size());
  for (size_t n = 0; n < plan->placed.size(); ++n) {
    const std::string& id = plan->placed[n]->id();
    const auto window = inputs.window_totals.find(id);
    const auto history = inputs.history_totals.find(id);
    if (window != inputs.window_totals.end()) per_node[n] = measured_delta_s(window->second);
    if (per_node[n]) {
      plan->delta_source[id] = "measured (window)";
    } else if (history != inputs.history_totals.end()) {
      per_node[n] = measured_delta_s(history->second);
      if (per_node[n]) plan->delta_source[id] = "measured (history)";
    }
    if (per_node[n]) measured.push_back(*per_node[n]);
  }
  const bool have_median = !measured.empty();
  const double fallback = have_median ? median(measured) : options.default_remote_penalty_s;
  for (size_t n = 0; n < plan->placed.size(); ++n) {
    const std::string& id = plan->placed[n]->id();
    if (!per_node[n]) plan->delta_source[id] = have_median ? "cluster median" : "default";
    plan->problem.cluster.nodes[n].remote_penalty_s = per_node[n].value_or(fallback);
  }
}

}  // namespace

std::vector<double> device_compute_costs(const std::vector<store::DeviceRecord>& devices,
                                         const PlannerOptions& options) {
  std::vector<double> costs;
  const bool measured =
      !devices.empty() && std::all_of(devices.begin(), devices.end(), [&](const auto& d) {
        return d.compute_pairs >= options.min_measured_pairs && d.us_per_pair() > 0;
      });
  for (const store::DeviceRecord& d : devices) {
    costs.push_back(measured ? d.us_per_pair() : (d.kind == "cuda" ? 0.1 : 1.0));
  }
  return costs;
}

Result<PlanProblem> build_problem(const ModelInfo& model, const PlanInputs& inputs,
                                  const PlannerOptions& options) {
  PlanProblem plan;
  plan.problem.model = model.shape;
  plan.problem.horizon_s = options.horizon_s;
  plan.policy = options.policy;
  std::vector<const Member*> nodes = inputs.nodes;
  std::sort(nodes.begin(), nodes.end(),
            [](const Member* a, const Member* b) { return a->id() < b->id(); });
  for (const Member* m : nodes) {
    if (!can_hold_an_expert(*m, model)) {
      plan.routing_only.push_back(m);
      continue;
    }
    plan.placed.push_back(m);
    placement::Node node;
    node.id = m->id();
    double measured_us = 0.0;
    int n_measured = 0;
    for (const store::DeviceRecord& d : m->record.devices) {
      if (d.compute_pairs >= options.min_measured_pairs && d.us_per_pair() > 0) {
        measured_us += d.us_per_pair();
        ++n_measured;
      }
    }
    node.expert_compute_s = n_measured > 0 ? measured_us / n_measured * 1e-6 : 0.0;
    const std::vector<double> costs = device_compute_costs(m->record.devices, options);
    for (size_t g = 0; g < m->record.devices.size(); ++g) {
      const store::DeviceRecord& d = m->record.devices[g];
      node.devices.push_back(
          {d.name, d.expert_budget_bytes,
           d.load_bytes_per_s > 0 ? d.load_bytes_per_s : options.default_load_bytes_per_s,
           costs[g]});
    }
    plan.problem.cluster.nodes.push_back(std::move(node));
  }
  if (plan.placed.empty()) {
    return failed_precondition(nodes.empty()
                                   ? "no node is up"
                                   : "no up node has memory for an expert (" +
                                         std::to_string(nodes.size()) + " routing-only nodes)");
  }
  assign_deltas(inputs, options, &plan);

  const int32_t n_total = model.index.n_total;
  placement::Activations& activations = plan.problem.activations;
  activations.window_s = std::max(1.0, inputs.window_s);
  activations.experts_per_token = model.n_experts_per_token;
  for (const Member* m : plan.placed) {
    std::vector<placement::PairCount>& pairs = activations.pairs.emplace_back();
    const auto it = inputs.pairs.find(m->id());
    if (it == inputs.pairs.end()) continue;
    for (const auto& [key, count] : it->second) {
      if (key.first >= 0 && key.first < key.second && key.second < n_total &&
          model.shape.layer_of(key.first) == model.shape.layer_of(key.second)) {
        pairs.push_back({key.first, key.second, count});
      }
    }
  }
  std::vector<double> cluster(n_total, 0.0);
  int n_with_history = 0;
  double history_total = 0.0;
  for (const Member* m : plan.placed) {
    const auto it = inputs.counts.find(m->id());
    std::vector<double> counts(n_total, 0.0);
    if (it != inputs.counts.end() && static_cast<int32_t>(it->second.size()) == n_total) {
      counts = it->second;
    }
    double total = 0.0;
    for (int32_t x = 0; x < n_total; ++x) total += counts[x];
    if (total > 0) {
      ++n_with_history;
      history_total += total;
      for (int32_t x = 0; x < n_total; ++x) cluster[x] += counts[x];
    }
    activations.counts.push_back(std::move(counts));
  }

  plan.cold_start = inputs.current == nullptr;
  if (plan.cold_start) {
    if (n_with_history == 0) {
      plan.policy = "uniform";
      plan.note = "cold start without statistics: uniform coverage weighted by memory";
    } else {
      // Nodes without history get the cluster-wide distribution, scaled to
      // the mean total of the nodes that have one.
      const double cluster_total = history_total;
      const double target = history_total / n_with_history;
      int n_filled = 0;
      for (size_t n = 0; n < activations.counts.size(); ++n) {
        std::vector<double>& counts = activations.counts[n];
        double total = 0.0;
        for (double c : counts) total += c;
        // An experts-only node (--role experts) serves no prompts of its own.
        if (total > 0 || plan.placed[n]->experts_only) continue;
        for (int32_t x = 0; x < n_total; ++x) counts[x] = cluster[x] * target / cluster_total;
        ++n_filled;
      }
      plan.note = "cold start from history: " + std::to_string(n_with_history) +
                  " node(s) with statistics, " + std::to_string(n_filled) +
                  " given the cluster-wide distribution";
    }
  } else {
    plan.note = "statistics since the committed placement";
  }
  if (inputs.current != nullptr) {
    plan.problem.current = to_library(*inputs.current, plan, model);
  }
  return plan;
}

placement::Placement to_library(const store::PlacementRecord& record, const PlanProblem& plan,
                                const ModelInfo& model) {
  placement::Placement out = placement::empty_placement(plan.problem.cluster);
  out.method = record.method;
  for (size_t n = 0; n < plan.placed.size(); ++n) {
    const auto node =
        std::find_if(record.nodes.begin(), record.nodes.end(),
                     [&](const NodePlacement& p) { return p.node_id == plan.placed[n]->id(); });
    if (node == record.nodes.end()) continue;
    const auto& devices = plan.problem.cluster.nodes[n].devices;
    std::set<ExpertIndex> on_node;
    for (const DevicePlacement& d : node->devices) {
      const auto device =
          std::find_if(devices.begin(), devices.end(),
                       [&](const placement::Device& g) { return g.id == d.device; });
      if (device == devices.end()) continue;
      std::vector<ExpertIndex>& list = out.experts[n][device - devices.begin()];
      for (const ExpertRef& r : d.experts) {
        const int32_t x = model.flat(r.layer, r.expert);
        if (x >= 0 && on_node.insert(x).second) list.push_back(x);
      }
      std::sort(list.begin(), list.end());
    }
  }
  return out;
}

std::vector<NodePlacement> to_wire(const placement::Placement& placement, const PlanProblem& plan,
                                   const ModelInfo& model) {
  std::vector<NodePlacement> out;
  for (size_t n = 0; n < plan.placed.size(); ++n) {
    NodePlacement node{plan.placed[n]->id(), plan.placed[n]->record.expert_endpoint, {}};
    const auto& devices = plan.problem.cluster.nodes[n].devices;
    for (size_t g = 0; g < devices.size(); ++g) {
      DevicePlacement device{devices[g].id, {}};
      for (ExpertIndex x : placement.experts[n][g]) device.experts.push_back(model.ref(x));
      node.devices.push_back(std::move(device));
    }
    out.push_back(std::move(node));
  }
  for (const Member* m : plan.routing_only) {
    NodePlacement node{m->id(), m->record.expert_endpoint, {}};
    for (const store::DeviceRecord& d : m->record.devices) node.devices.push_back({d.name, {}});
    out.push_back(std::move(node));
  }
  return out;
}

namespace {

struct NodeLoad {
  uint64_t resident_bytes = 0;
  uint64_t limit_bytes = 0;       // budget + headroom; 0: unknown
  std::vector<uint8_t> resident;  // [flat id]
};

NodeLoad node_load(const Member& m, const ModelInfo& model) {
  NodeLoad out;
  out.resident.assign(static_cast<size_t>(model.index.n_total), 0);
  for (const ExpertRef& r : m.resident) {
    const int32_t x = model.flat(static_cast<uint32_t>(r.layer), static_cast<uint32_t>(r.expert));
    if (x < 0 || out.resident[static_cast<size_t>(x)]) continue;
    out.resident[static_cast<size_t>(x)] = 1;
    out.resident_bytes += model.shape.expert_bytes(x);
  }
  if (m.record.migration_headroom_bytes > 0) {
    uint64_t budget = 0;
    for (const store::DeviceRecord& d : m.record.devices) budget += d.expert_budget_bytes;
    out.limit_bytes = budget + m.record.migration_headroom_bytes;
  }
  return out;
}

// The gate in the policy's terms (unknown names: the proxy cost).
placement::Objective objective_of(const std::string& policy) {
  const placement::PolicyInfo* info = placement::find_policy(policy);
  return info != nullptr ? info->objective : placement::Objective::kActivations;
}

void fill_gate(const PlanProblem& plan, const std::string& policy, Candidate* c) {
  c->current = plan.problem.current ? *plan.problem.current
                                    : placement::empty_placement(plan.problem.cluster);
  c->gate = placement::evaluate_gate(plan.problem, c->current, c->placement, objective_of(policy));
  c->costs_current = placement::evaluate_costs(plan.problem, c->current);
  c->costs_new = placement::evaluate_costs(plan.problem, c->placement);
  c->migration_bytes = placement::migration_bytes(plan.problem, c->current, c->placement);
}

}  // namespace

std::vector<std::string> fit_migration_headroom(const PlanProblem& plan, const ModelInfo& model,
                                                placement::Placement* target) {
  const size_t n_nodes = plan.placed.size();
  const size_t n_total = static_cast<size_t>(model.index.n_total);
  std::vector<NodeLoad> loads;
  std::vector<std::string> over;
  for (size_t n = 0; n < n_nodes; ++n) {
    loads.push_back(node_load(*plan.placed[n], model));
    const NodeLoad& load = loads.back();
    uint64_t added = 0;
    for (const auto& device : target->experts[n]) {
      for (ExpertIndex x : device) {
        if (!load.resident[static_cast<size_t>(x)]) added += model.shape.expert_bytes(x);
      }
    }
    if (load.limit_bytes > 0 && load.resident_bytes + added > load.limit_bytes) {
      over.push_back(plan.placed[n]->id());
    }
  }
  if (over.empty()) return over;

  // The stage: start from what the nodes hold now (so it covers at least
  // what the current placement still covers), then move towards the
  // target -- adding within each node's headroom, making room only by
  // dropping what the target drops and another node also holds.
  placement::Placement stage = plan.problem.current
                                   ? *plan.problem.current
                                   : placement::empty_placement(plan.problem.cluster);
  stage.method = target->method;
  std::vector<int32_t> holders(n_total, 0);
  std::vector<std::vector<uint8_t>> on_stage(n_nodes, std::vector<uint8_t>(n_total, 0));
  std::vector<std::vector<uint8_t>> in_target(n_nodes, std::vector<uint8_t>(n_total, 0));
  for (size_t n = 0; n < n_nodes; ++n) {
    for (const auto& device : stage.experts[n]) {
      for (ExpertIndex x : device) on_stage[n][static_cast<size_t>(x)] = 1;
    }
    for (size_t x = 0; x < n_total; ++x) holders[x] += on_stage[n][x];
    for (const auto& device : target->experts[n]) {
      for (ExpertIndex x : device) in_target[n][static_cast<size_t>(x)] = 1;
    }
  }
  auto device_bytes = [&](size_t n, size_t g) {
    uint64_t bytes = 0;
    for (ExpertIndex x : stage.experts[n][g]) bytes += model.shape.expert_bytes(x);
    return bytes;
  };
  for (size_t n = 0; n < n_nodes; ++n) {
    const NodeLoad& load = loads[n];
    const uint64_t allowance = load.limit_bytes == 0 ? UINT64_MAX
                               : load.limit_bytes > load.resident_bytes
                                   ? load.limit_bytes - load.resident_bytes
                                   : 0;
    struct Add {
      size_t device;
      ExpertIndex x;
    };
    std::vector<Add> adds;
    for (size_t g = 0; g < target->experts[n].size(); ++g) {
      for (ExpertIndex x : target->experts[n][g]) {
        if (!on_stage[n][static_cast<size_t>(x)]) adds.push_back({g, x});
      }
    }
    // Uncovered experts first (coverage), then what this node uses most.
    const std::vector<double>& f = plan.problem.activations.counts[n];
    std::stable_sort(adds.begin(), adds.end(), [&](const Add& a, const Add& b) {
      const bool ua = holders[static_cast<size_t>(a.x)] == 0;
      const bool ub = holders[static_cast<size_t>(b.x)] == 0;
      if (ua != ub) return ua;
      return f[static_cast<size_t>(a.x)] > f[static_cast<size_t>(b.x)];
    });
    uint64_t loaded = 0;
    for (const Add& a : adds) {
      const uint64_t bytes = model.shape.expert_bytes(a.x);
      if (loaded + bytes > allowance) continue;
      std::vector<ExpertIndex>& list = stage.experts[n][a.device];
      const uint64_t budget = plan.problem.cluster.nodes[n].devices[a.device].expert_budget_bytes;
      uint64_t used = device_bytes(n, a.device);
      // Make room by dropping experts the target drops here and another node holds.
      for (size_t i = 0; used + bytes > budget && i < list.size();) {
        const ExpertIndex y = list[i];
        if (!in_target[n][static_cast<size_t>(y)] && holders[static_cast<size_t>(y)] >= 2) {
          used -= model.shape.expert_bytes(y);
          --holders[static_cast<size_t>(y)];
          on_stage[n][static_cast<size_t>(y)] = 0;
          list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          ++i;
        }
      }
      if (used + bytes > budget) continue;
      list.push_back(a.x);
      std::sort(list.begin(), list.end());
      on_stage[n][static_cast<size_t>(a.x)] = 1;
      ++holders[static_cast<size_t>(a.x)];
      loaded += bytes;
    }
  }
  // What the target drops goes now where another node still holds it.
  for (size_t n = 0; n < n_nodes; ++n) {
    for (auto& list : stage.experts[n]) {
      list.erase(std::remove_if(list.begin(), list.end(),
                                [&](ExpertIndex y) {
                                  const size_t i = static_cast<size_t>(y);
                                  if (in_target[n][i] || holders[i] < 2) return false;
                                  --holders[i];
                                  return true;
                                }),
                 list.end());
    }
  }
  *target = std::move(stage);
  return over;
}

Result<Candidate> solve_candidate(const PlanProblem& plan, const ModelInfo& model,
                                  const std::string& policy_override) {
  const std::string& policy = policy_override.empty() ? plan.policy : policy_override;
  Candidate c;
  const auto t0 = std::chrono::steady_clock::now();
  DMOE_ASSIGN_OR_RETURN(c.placement, placement::solve(policy, plan.problem));
  // Without statistics one spread of the experts is as good as another:
  // take the one the nodes can load from their own disks.
  if (plan.cold_start && policy == "uniform") {
    if (const int swaps = prefer_expert_files(plan, &c.placement); swaps > 0) {
      c.placement.method += "; " + std::to_string(swaps) + " swaps toward the nodes' expert files";
    }
  }
  const std::vector<std::string> staged = fit_migration_headroom(plan, model, &c.placement);
  if (!staged.empty()) {
    std::string nodes;
    for (const std::string& id : staged) nodes += (nodes.empty() ? "" : ", ") + id;
    c.placement.method += "; staged to the migration headroom of " + nodes;
  }
  c.solve_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  fill_gate(plan, policy, &c);
  return c;
}

Result<Candidate> evaluate_candidate(const PlanProblem& plan, const ModelInfo& model,
                                     placement::Placement placement) {
  DMOE_RETURN_IF_ERROR(placement::validate_problem(plan.problem));
  DMOE_RETURN_IF_ERROR(placement::check_placement(plan.problem, placement));
  placement::Placement fitted = placement;
  const std::vector<std::string> over = fit_migration_headroom(plan, model, &fitted);
  if (!over.empty()) {
    return resource_exhausted("node '" + over.front() +
                              "' would have to load more experts than its memory allows while "
                              "it still serves its current ones (expert budget + "
                              "--migration-headroom); move fewer experts to it at once");
  }
  Candidate c;
  c.placement = std::move(placement);
  fill_gate(plan, plan.policy, &c);
  return c;
}

std::vector<NodeMoves> diff_placements(const std::vector<NodePlacement>* from,
                                       const std::vector<NodePlacement>& to,
                                       const ModelInfo& model) {
  std::vector<NodeMoves> out;
  for (const NodePlacement& node : to) {
    NodeMoves moves;
    moves.node_id = node.node_id;
    std::set<std::pair<std::string, int32_t>> before_device;  // (device, flat id)
    std::set<int32_t> before, after;
    if (from != nullptr) {
      for (const NodePlacement& old : *from) {
        if (old.node_id != node.node_id) continue;
        for (const DevicePlacement& d : old.devices) {
          for (const ExpertRef& r : d.experts) {
            const int32_t x = model.flat(r.layer, r.expert);
            if (x < 0) continue;
            before.insert(x);
            before_device.insert({d.device, x});
          }
        }
      }
    }
    for (const DevicePlacement& d : node.devices) {
      for (const ExpertRef& r : d.experts) {
        const int32_t x = model.flat(r.layer, r.expert);
        if (x < 0) continue;
        after.insert(x);
        // Same rule as T_mig: a load wherever the device did not hold it.
        if (before_device.count({d.device, x}) == 0) {
          moves.load_bytes += model.shape.expert_bytes(x);
        }
      }
    }
    for (int32_t x : after) (before.count(x) ? moves.kept : moves.added) += 1;
    for (int32_t x : before) moves.removed += after.count(x) ? 0 : 1;
    out.push_back(moves);
  }
  return out;
}

bool covers_all(const store::PlacementRecord& record, const Membership& membership,
                const ModelInfo& model) {
  std::vector<uint8_t> covered(model.index.n_total, 0);
  for (const NodePlacement& node : record.nodes) {
    const Member* m = membership.find(node.node_id);
    if (m == nullptr || m->state == NodeState::kDown) continue;
    for (const DevicePlacement& d : node.devices) {
      for (const ExpertRef& r : d.experts) {
        const int32_t x = model.flat(r.layer, r.expert);
        if (x >= 0) covered[x] = 1;
      }
    }
  }
  return std::find(covered.begin(), covered.end(), 0) == covered.end();
}

}  // namespace dancemoe::scheduler
