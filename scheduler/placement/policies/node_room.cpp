#include "scheduler/placement/policies/node_room.h"

#include <algorithm>
#include <numeric>

namespace dancemoe::placement {

NodeRoom::NodeRoom(const Problem& problem, const Capacity& capacity)
    : model_(&problem.model),
      capacity_bytes_(capacity.node_bytes),
      free_bytes_(problem.cluster.nodes.size(), 0),
      device_free_(problem.cluster.nodes.size()),
      device_of_(problem.cluster.nodes.size(),
                 std::vector<int32_t>(problem.model.n_experts_total(), -1)),
      copies_(problem.model.n_experts_total(), 0),
      sets_(problem.cluster.nodes.size()) {
  for (size_t n = 0; n < problem.cluster.nodes.size(); ++n) {
    const Node& node = problem.cluster.nodes[n];
    for (size_t g = 0; g < node.devices.size(); ++g) {
      const uint64_t bytes =
          capacity.slot_based
              ? static_cast<uint64_t>(capacity.device_slots[n][g]) * capacity.slot_bytes
              : node.devices[g].expert_budget_bytes;
      device_free_[n].push_back(bytes);
    }
    // Never more than the node's (capped) capacity.
    free_bytes_[n] = capacity.node_bytes[n];
  }
}

bool NodeRoom::fits(size_t n, ExpertIndex x) const {
  if (device_of_[n][x] >= 0) return false;
  const uint64_t bytes = model_->expert_bytes(x);
  if (free_bytes_[n] < bytes) return false;
  for (uint64_t free : device_free_[n]) {
    if (free >= bytes) return true;
  }
  return false;
}

void NodeRoom::take(size_t n, ExpertIndex x) {
  const uint64_t bytes = model_->expert_bytes(x);
  int best = -1;
  for (size_t g = 0; g < device_free_[n].size(); ++g) {
    if (device_free_[n][g] >= bytes && (best < 0 || device_free_[n][g] < device_free_[n][best])) {
      best = static_cast<int>(g);
    }
  }
  device_of_[n][x] = best;  // callers check fits() first
  device_free_[n][best] -= bytes;
  free_bytes_[n] -= bytes;
  ++copies_[x];
  sets_[n].push_back(x);
}

void NodeRoom::take_on(size_t n, size_t g, ExpertIndex x) {
  const uint64_t bytes = model_->expert_bytes(x);
  device_of_[n][x] = static_cast<int32_t>(g);
  device_free_[n][g] -= bytes;
  free_bytes_[n] -= bytes;
  ++copies_[x];
  sets_[n].push_back(x);
}

void NodeRoom::drop(size_t n, ExpertIndex x) {
  const uint64_t bytes = model_->expert_bytes(x);
  device_free_[n][device_of_[n][x]] += bytes;
  device_of_[n][x] = -1;
  free_bytes_[n] += bytes;
  --copies_[x];
  std::vector<ExpertIndex>& set = sets_[n];
  set.erase(std::find(set.begin(), set.end(), x));
}

double node_load_bytes_per_s(const Problem& problem, const Capacity& capacity, size_t n) {
  const Node& node = problem.cluster.nodes[n];
  double slot_speed = 0.0, slot_total = 0.0, plain_speed = 0.0;
  for (size_t g = 0; g < node.devices.size(); ++g) {
    const double slots = capacity.slot_based
                             ? static_cast<double>(capacity.device_slots[n][g])
                             : static_cast<double>(node.devices[g].expert_budget_bytes);
    slot_speed += slots * node.devices[g].load_bytes_per_s;
    slot_total += slots;
    plain_speed += node.devices[g].load_bytes_per_s / static_cast<double>(node.devices.size());
  }
  return slot_total > 0 ? slot_speed / slot_total : plain_speed;
}

std::vector<double> global_counts(const Problem& problem) {
  std::vector<double> total(problem.model.n_experts_total(), 0.0);
  for (const std::vector<double>& row : problem.activations.counts) {
    for (size_t x = 0; x < total.size(); ++x) total[x] += row[x];
  }
  return total;
}

std::vector<ExpertIndex> experts_by_global_count(const Problem& problem) {
  const std::vector<double> total = global_counts(problem);
  std::vector<ExpertIndex> order(total.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](ExpertIndex a, ExpertIndex b) { return total[a] > total[b]; });
  return order;
}

Result<Placement> fragmentation_fallback(const Problem& problem, const Capacity& capacity,
                                         const NodeSets& wanted, const std::string& label) {
  DMOE_ASSIGN_OR_RETURN(auto where, one_copy_packing(problem));
  NodeRoom room(problem, capacity);
  for (ExpertIndex x = 0; x < problem.model.n_experts_total(); ++x) {
    room.take_on(where[x].first, where[x].second, x);
  }
  for (size_t n = 0; n < wanted.size() && n < room.n_nodes(); ++n) {
    for (ExpertIndex x : wanted[n]) {
      if (room.fits(n, x)) room.take(n, x);
    }
  }
  return pack_onto_devices(problem, capacity, room.sets(),
                           label +
                               " (fragmentation fallback: coverage from a best-fit-decreasing "
                               "packing, then the policy's choices where they fit)",
                           &room.hints());
}

std::vector<ExpertIndex> experts_for_packing(const ModelShape& model) {
  std::vector<ExpertIndex> order(model.n_experts_total());
  std::iota(order.begin(), order.end(), 0);
  if (!model.uniform_expert_bytes()) {
    std::stable_sort(order.begin(), order.end(), [&](ExpertIndex a, ExpertIndex b) {
      return model.expert_bytes(a) > model.expert_bytes(b);
    });
  }
  return order;
}

Status take_somewhere(NodeRoom& room, ExpertIndex x) {
  const ModelShape& model = room.model();
  const uint64_t need = model.expert_bytes(x);
  int best_n = -1;
  uint64_t best_free = 0;
  for (size_t n = 0; n < room.n_nodes(); ++n) {
    if (room.holds(n, x)) continue;
    for (size_t g = 0; g < room.n_devices(n); ++g) {
      const uint64_t free = room.device_free(n, g);
      if (free >= need && (best_n < 0 || free < best_free)) {
        best_n = static_cast<int>(n);
        best_free = free;
      }
    }
  }
  if (best_n >= 0) {
    room.take(best_n, x);
    return Status::ok();
  }
  // Drop replicas (experts held elsewhere too) from the one device where the
  // fewest must go, largest first.
  int drop_n = -1, drop_g = -1;
  size_t drop_count = 0;
  for (size_t n = 0; n < room.n_nodes(); ++n) {
    if (room.holds(n, x)) continue;
    for (size_t g = 0; g < room.n_devices(n); ++g) {
      std::vector<uint64_t> sizes;
      for (ExpertIndex y : room.sets()[n]) {
        if (room.device_of(n, y) == static_cast<int32_t>(g) && room.copies(y) >= 2) {
          sizes.push_back(model.expert_bytes(y));
        }
      }
      std::sort(sizes.rbegin(), sizes.rend());
      uint64_t free = room.device_free(n, g);
      size_t k = 0;
      while (free < need && k < sizes.size()) free += sizes[k++];
      if (free >= need && (drop_n < 0 || k < drop_count)) {
        drop_n = static_cast<int>(n);
        drop_g = static_cast<int>(g);
        drop_count = k;
      }
    }
  }
  if (drop_n >= 0) {
    std::vector<ExpertIndex> replicas;
    for (ExpertIndex y : room.sets()[drop_n]) {
      if (room.device_of(drop_n, y) == drop_g && room.copies(y) >= 2) replicas.push_back(y);
    }
    std::stable_sort(replicas.begin(), replicas.end(), [&](ExpertIndex a, ExpertIndex b) {
      return model.expert_bytes(a) > model.expert_bytes(b);
    });
    for (size_t k = 0; k < drop_count; ++k) room.drop(drop_n, replicas[k]);
    room.take_on(drop_n, drop_g, x);
    return Status::ok();
  }
  // One relocation: a device (n, g) short of room by `gap` gives up an
  // expert y of at least `gap` bytes that fits on another device (m, h).
  for (size_t n = 0; n < room.n_nodes(); ++n) {
    if (room.holds(n, x)) continue;
    for (size_t g = 0; g < room.n_devices(n); ++g) {
      const uint64_t free = room.device_free(n, g);
      const uint64_t gap = need - free;
      for (ExpertIndex y : room.sets()[n]) {
        if (room.device_of(n, y) != static_cast<int32_t>(g)) continue;
        const uint64_t y_bytes = model.expert_bytes(y);
        if (y_bytes < gap) continue;
        for (size_t m = 0; m < room.n_nodes(); ++m) {
          if (m != n && room.holds(m, y)) continue;
          for (size_t h = 0; h < room.n_devices(m); ++h) {
            if ((m == n && h == g) || room.device_free(m, h) < y_bytes) continue;
            room.drop(n, y);
            room.take_on(m, h, y);
            room.take_on(n, g, x);
            return Status::ok();
          }
        }
      }
    }
  }
  return resource_exhausted("could not give " + describe_expert(model, x) + " (" +
                            std::to_string(need) +
                            " bytes) a device: memory too fragmented for these expert sizes");
}

Status spread_once(NodeRoom& room) {
  const size_t n_nodes = room.n_nodes();
  std::vector<double> weight(n_nodes), current(n_nodes, 0.0);
  double weight_sum = 0.0;
  for (size_t n = 0; n < n_nodes; ++n) {
    weight[n] = static_cast<double>(room.capacity_bytes(n));
    weight_sum += weight[n];
  }
  for (ExpertIndex x : experts_for_packing(room.model())) {
    // Smooth weighted round-robin (every node gains its weight, the chosen
    // one pays the sum): deterministic and evenly interleaved.
    int best = -1;
    for (size_t n = 0; n < n_nodes; ++n) {
      current[n] += weight[n];
      if (room.fits(n, x) && (best < 0 || current[n] > current[best])) best = static_cast<int>(n);
    }
    if (best < 0) {
      DMOE_RETURN_IF_ERROR(take_somewhere(room, x));
      continue;
    }
    current[best] -= weight_sum;
    room.take(best, x);
  }
  return Status::ok();
}

}  // namespace dancemoe::placement
