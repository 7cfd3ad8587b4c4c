#include "scheduler/placement/validate.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

namespace dancemoe::placement {
namespace {

std::string node_name(const Cluster& cluster, size_t n) {
  return "node '" + cluster.nodes[n].id + "'";
}

Status validate_model(const ModelShape& model) {
  if (model.n_layers() == 0) return invalid_argument("model.layers: expected at least one layer");
  for (int32_t l = 0; l < model.n_layers(); ++l) {
    const LayerShape& layer = model.layers()[l];
    if (layer.n_experts <= 0) {
      return invalid_argument("model.layers[" + std::to_string(l) +
                              "].experts: expected a positive count, got " +
                              std::to_string(layer.n_experts));
    }
    if (layer.expert_bytes == 0) {
      return invalid_argument("model.layers[" + std::to_string(l) +
                              "].expert_bytes: expected a positive size, got 0");
    }
  }
  return Status::ok();
}

Status validate_cluster(const Cluster& cluster) {
  if (cluster.nodes.empty()) return invalid_argument("nodes: expected at least one node");
  std::set<std::string> node_ids;
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    const Node& node = cluster.nodes[n];
    const std::string where = "nodes[" + std::to_string(n) + "]";
    if (node.id.empty()) return invalid_argument(where + ".id: expected a non-empty string");
    if (!node_ids.insert(node.id).second) {
      return invalid_argument(where + ".id: node id '" + node.id + "' appears twice");
    }
    if (!std::isfinite(node.remote_penalty_s) || node.remote_penalty_s < 0) {
      return invalid_argument(where + ".remote_penalty_s: expected a finite value >= 0, got " +
                              std::to_string(node.remote_penalty_s));
    }
    if (!std::isfinite(node.expert_compute_s) || node.expert_compute_s < 0) {
      return invalid_argument(where + ".expert_compute_s: expected a finite value >= 0, got " +
                              std::to_string(node.expert_compute_s));
    }
    if (node.devices.empty()) {
      return invalid_argument(where + ".devices: " + node_name(cluster, n) +
                              " has no device; a node that holds no experts (thin client) is "
                              "left out of the placement problem");
    }
    std::set<std::string> device_ids;
    for (size_t g = 0; g < node.devices.size(); ++g) {
      const Device& device = node.devices[g];
      const std::string dwhere = where + ".devices[" + std::to_string(g) + "]";
      if (device.id.empty()) return invalid_argument(dwhere + ".id: expected a non-empty string");
      if (!device_ids.insert(device.id).second) {
        return invalid_argument(dwhere + ".id: device id '" + device.id + "' appears twice on " +
                                node_name(cluster, n));
      }
      if (!std::isfinite(device.load_bytes_per_s) || device.load_bytes_per_s <= 0) {
        return invalid_argument(dwhere + ".load_bytes_per_s: expected a finite value > 0, got " +
                                std::to_string(device.load_bytes_per_s));
      }
    }
  }
  return Status::ok();
}

Status validate_pairs(const Problem& problem) {
  const Activations& act = problem.activations;
  const ModelShape& model = problem.model;
  if (act.experts_per_token < 0) {
    return invalid_argument("experts_per_token: expected a count >= 0 (0: unknown), got " +
                            std::to_string(act.experts_per_token));
  }
  if (act.pairs.empty()) return Status::ok();
  if (act.pairs.size() != problem.cluster.nodes.size()) {
    return invalid_argument("pairs: expected co-activation lists for " +
                            std::to_string(problem.cluster.nodes.size()) + " nodes, got " +
                            std::to_string(act.pairs.size()));
  }
  for (size_t n = 0; n < act.pairs.size(); ++n) {
    for (const PairCount& p : act.pairs[n]) {
      const std::string where = "pairs of " + node_name(problem.cluster, n);
      if (p.a < 0 || p.b >= model.n_experts_total() || p.a >= p.b ||
          model.layer_of(p.a) != model.layer_of(p.b)) {
        return invalid_argument(where + ": expected two experts a < b of one layer, got " +
                                std::to_string(p.a) + " and " + std::to_string(p.b));
      }
      if (!std::isfinite(p.count) || p.count < 0) {
        return invalid_argument(where + ", " + describe_expert(model, p.a) + " with expert " +
                                std::to_string(model.expert_in_layer(p.b)) +
                                ": expected a finite count >= 0, got " + std::to_string(p.count));
      }
    }
  }
  return Status::ok();
}

Status validate_activations(const Problem& problem) {
  const Activations& act = problem.activations;
  const Cluster& cluster = problem.cluster;
  if (!std::isfinite(act.window_s) || act.window_s <= 0) {
    return invalid_argument("window_s: expected a finite value > 0, got " +
                            std::to_string(act.window_s));
  }
  if (act.counts.size() != cluster.nodes.size()) {
    return invalid_argument("activations: expected counts for " +
                            std::to_string(cluster.nodes.size()) + " nodes, got " +
                            std::to_string(act.counts.size()));
  }
  const ModelShape& model = problem.model;
  for (size_t n = 0; n < act.counts.size(); ++n) {
    const std::vector<double>& row = act.counts[n];
    if (row.size() != static_cast<size_t>(model.n_experts_total())) {
      return invalid_argument("activations of " + node_name(cluster, n) + ": expected " +
                              std::to_string(model.n_experts_total()) +
                              " counts (one per expert of every layer), got " +
                              std::to_string(row.size()));
    }
    for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) {
      if (!std::isfinite(row[x]) || row[x] < 0) {
        return invalid_argument("activations of " + node_name(cluster, n) + ", " +
                                describe_expert(model, x) + ": expected a finite count >= 0, got " +
                                std::to_string(row[x]));
      }
    }
  }
  return validate_pairs(problem);
}

Status validate_memory(const Problem& problem) {
  const ModelShape& model = problem.model;
  const Cluster& cluster = problem.cluster;
  const uint64_t smallest = model.min_expert_bytes();
  uint64_t total_budget = 0;
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    uint64_t node_budget = 0;
    bool fits_one = false;
    for (const Device& device : cluster.nodes[n].devices) {
      node_budget += device.expert_budget_bytes;
      fits_one = fits_one || device.expert_budget_bytes >= smallest;
    }
    total_budget += node_budget;
    if (!fits_one) {
      return resource_exhausted(node_name(cluster, n) +
                                " can hold no expert: its largest device budget is below the "
                                "smallest expert (" +
                                std::to_string(smallest) + " bytes); its devices offer " +
                                std::to_string(node_budget) + " bytes in all");
    }
  }
  const uint64_t need = model.total_expert_bytes();
  if (model.uniform_expert_bytes()) {
    const Capacity cap = compute_capacity(cluster, model);
    int64_t slots = 0;
    for (int64_t s : cap.node_slots) slots += s;
    if (slots < model.n_experts_total()) {
      const int64_t short_slots = model.n_experts_total() - slots;
      return resource_exhausted(
          "memory cannot hold every expert once: " + std::to_string(model.n_experts_total()) +
          " experts of " + std::to_string(cap.slot_bytes) + " bytes need " + std::to_string(need) +
          " bytes, the devices fit " + std::to_string(slots) + " whole experts; missing " +
          std::to_string(short_slots) + " expert slots (" +
          std::to_string(static_cast<uint64_t>(short_slots) * cap.slot_bytes) + " bytes)");
    }
  } else if (total_budget < need) {
    return resource_exhausted("memory cannot hold every expert once: the experts need " +
                              std::to_string(need) + " bytes, the devices offer " +
                              std::to_string(total_budget) + " bytes; missing " +
                              std::to_string(need - total_budget) + " bytes");
  } else {
    // Enough bytes in total does not mean the experts fit into the devices
    // (bin packing): refuse what best-fit decreasing cannot pack. Bin
    // packing is NP-hard, so an adversarial packable instance may be refused
    // too; the message says it is fragmentation.
    DMOE_RETURN_IF_ERROR(one_copy_packing(problem).status());
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<std::pair<int32_t, int32_t>>> one_copy_packing(const Problem& problem) {
  const ModelShape& model = problem.model;
  std::vector<uint64_t> free;
  std::vector<std::pair<int32_t, int32_t>> device_at;
  for (size_t n = 0; n < problem.cluster.nodes.size(); ++n) {
    const Node& node = problem.cluster.nodes[n];
    for (size_t g = 0; g < node.devices.size(); ++g) {
      free.push_back(node.devices[g].expert_budget_bytes);
      device_at.emplace_back(static_cast<int32_t>(n), static_cast<int32_t>(g));
    }
  }
  std::vector<ExpertIndex> order(model.n_experts_total());
  for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) order[x] = x;
  std::stable_sort(order.begin(), order.end(), [&](ExpertIndex a, ExpertIndex b) {
    return model.expert_bytes(a) > model.expert_bytes(b);
  });
  std::vector<std::pair<int32_t, int32_t>> where(model.n_experts_total());
  for (ExpertIndex x : order) {
    const uint64_t bytes = model.expert_bytes(x);
    int best = -1;
    for (size_t d = 0; d < free.size(); ++d) {
      if (free[d] >= bytes && (best < 0 || free[d] < free[best])) best = static_cast<int>(d);
    }
    if (best < 0) {
      uint64_t left = 0;
      for (uint64_t f : free) left += f;
      return resource_exhausted(
          "memory cannot hold every expert once: the devices have enough bytes in total but "
          "are too fragmented; " +
          describe_expert(model, x) + " (" + std::to_string(bytes) +
          " bytes) finds no device with room after packing the larger experts (" +
          std::to_string(left) + " bytes left in smaller pieces)");
    }
    free[best] -= bytes;
    where[x] = device_at[best];
  }
  return where;
}

Capacity compute_capacity(const Cluster& cluster, const ModelShape& model) {
  Capacity cap;
  cap.slot_based = model.n_layers() > 0 && model.uniform_expert_bytes();
  cap.slot_bytes = cap.slot_based ? model.layers().front().expert_bytes : 0;
  const int64_t n_total = model.n_experts_total();
  cap.device_slots.resize(cluster.nodes.size());
  cap.node_slots.assign(cluster.nodes.size(), 0);
  cap.node_bytes.assign(cluster.nodes.size(), 0);
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    uint64_t bytes = 0;
    for (const Device& device : cluster.nodes[n].devices) {
      const int64_t slots = cap.slot_bytes > 0
                                ? static_cast<int64_t>(device.expert_budget_bytes / cap.slot_bytes)
                                : 0;
      cap.device_slots[n].push_back(slots);
      cap.node_slots[n] += slots;
      bytes += device.expert_budget_bytes;
    }
    cap.node_slots[n] = std::min(cap.node_slots[n], n_total);
    cap.node_bytes[n] =
        cap.slot_based ? static_cast<uint64_t>(cap.node_slots[n]) * cap.slot_bytes : bytes;
  }
  return cap;
}

Status validate_problem(const Problem& problem) {
  DMOE_RETURN_IF_ERROR(validate_model(problem.model));
  DMOE_RETURN_IF_ERROR(validate_cluster(problem.cluster));
  if (!std::isfinite(problem.horizon_s) || problem.horizon_s <= 0) {
    return invalid_argument("horizon_s: expected a finite value > 0, got " +
                            std::to_string(problem.horizon_s));
  }
  DMOE_RETURN_IF_ERROR(validate_activations(problem));
  DMOE_RETURN_IF_ERROR(validate_memory(problem));
  if (problem.current) {
    PlacementCheck check;
    check.require_coverage = false;
    check.check_memory = false;
    DMOE_RETURN_IF_ERROR(
        check_placement(problem, *problem.current, check).with_context("current placement"));
  }
  return Status::ok();
}

Status check_placement(const Problem& problem, const Placement& placement, PlacementCheck check) {
  const Cluster& cluster = problem.cluster;
  const ModelShape& model = problem.model;
  if (placement.experts.size() != cluster.nodes.size()) {
    return invalid_argument("placement has " + std::to_string(placement.experts.size()) +
                            " nodes, the cluster has " + std::to_string(cluster.nodes.size()));
  }
  std::vector<uint8_t> covered(model.n_experts_total(), 0);
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    const Node& node = cluster.nodes[n];
    if (placement.experts[n].size() != node.devices.size()) {
      return invalid_argument("placement of " + node_name(cluster, n) + " has " +
                              std::to_string(placement.experts[n].size()) + " devices, expected " +
                              std::to_string(node.devices.size()));
    }
    std::vector<uint8_t> on_node(model.n_experts_total(), 0);
    for (size_t g = 0; g < node.devices.size(); ++g) {
      const std::vector<ExpertIndex>& ids = placement.experts[n][g];
      const std::string where = node_name(cluster, n) + " device '" + node.devices[g].id + "'";
      uint64_t used = 0;
      for (size_t i = 0; i < ids.size(); ++i) {
        const ExpertIndex x = ids[i];
        if (x < 0 || x >= model.n_experts_total()) {
          return invalid_argument(where + " names expert id " + std::to_string(x) +
                                  ", outside the model's " +
                                  std::to_string(model.n_experts_total()) + " experts");
        }
        if (i > 0 && ids[i - 1] >= x) {
          return invalid_argument(where + ": expert list is not sorted or repeats " +
                                  describe_expert(model, x));
        }
        if (on_node[x]) {
          return invalid_argument(node_name(cluster, n) + " holds " + describe_expert(model, x) +
                                  " on two devices");
        }
        on_node[x] = 1;
        covered[x] = 1;
        used += model.expert_bytes(x);
      }
      if (check.check_memory && used > node.devices[g].expert_budget_bytes) {
        return resource_exhausted(where + " holds " + std::to_string(used) +
                                  " bytes of experts, over its budget of " +
                                  std::to_string(node.devices[g].expert_budget_bytes) + " bytes");
      }
    }
  }
  if (check.require_coverage) {
    for (ExpertIndex x = 0; x < model.n_experts_total(); ++x) {
      if (!covered[x]) {
        return failed_precondition("placement does not cover " + describe_expert(model, x) +
                                   ": no device holds it");
      }
    }
  }
  return Status::ok();
}

}  // namespace dancemoe::placement
