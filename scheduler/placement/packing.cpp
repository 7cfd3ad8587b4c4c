#include "scheduler/placement/packing.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace dancemoe::placement {
namespace {

struct DeviceState {
  uint64_t free_bytes = 0;
  double load = 0.0;
  std::vector<ExpertIndex> ids;
};

using ClusterState = std::vector<std::vector<DeviceState>>;

ClusterState initial_state(const Problem& problem, const Capacity& capacity) {
  ClusterState state(problem.cluster.nodes.size());
  for (size_t n = 0; n < state.size(); ++n) {
    const Node& node = problem.cluster.nodes[n];
    state[n].resize(node.devices.size());
    for (size_t g = 0; g < node.devices.size(); ++g) {
      state[n][g].free_bytes =
          capacity.slot_based
              ? static_cast<uint64_t>(capacity.device_slots[n][g]) * capacity.slot_bytes
              : node.devices[g].expert_budget_bytes;
    }
  }
  return state;
}

void put(DeviceState& device, ExpertIndex x, uint64_t bytes, double load) {
  device.free_bytes -= bytes;
  device.load += load;
  device.ids.push_back(x);
}

// Packs one node's set; returns the experts that found no device.
std::vector<ExpertIndex> pack_node(const Problem& problem, const Capacity& capacity, size_t n,
                                   const std::vector<ExpertIndex>& set,
                                   std::vector<DeviceState>& devs,
                                   std::vector<int32_t>& current_device) {
  const ModelShape& model = problem.model;
  const std::vector<double>& f = problem.activations.counts[n];
  std::vector<ExpertIndex> order(set);
  if (capacity.slot_based) {
    std::sort(order.begin(), order.end(),
              [&](ExpertIndex a, ExpertIndex b) { return f[a] != f[b] ? f[a] > f[b] : a < b; });
  } else {
    std::sort(order.begin(), order.end(), [&](ExpertIndex a, ExpertIndex b) {
      const uint64_t ba = model.expert_bytes(a), bb = model.expert_bytes(b);
      if (ba != bb) return ba > bb;
      return f[a] != f[b] ? f[a] > f[b] : a < b;
    });
  }
  std::fill(current_device.begin(), current_device.end(), -1);
  if (problem.current && n < problem.current->experts.size()) {
    const auto& cur = problem.current->experts[n];
    for (size_t g = 0; g < cur.size() && g < devs.size(); ++g) {
      for (ExpertIndex x : cur[g]) {
        if (x >= 0 && x < model.n_experts_total()) current_device[x] = static_cast<int32_t>(g);
      }
    }
  }
  std::vector<ExpertIndex> rest;
  for (ExpertIndex x : order) {
    const int32_t g = current_device[x];
    const uint64_t bytes = model.expert_bytes(x);
    if (g >= 0 && devs[g].free_bytes >= bytes) {
      put(devs[g], x, bytes, f[x]);
    } else {
      rest.push_back(x);
    }
  }
  std::vector<ExpertIndex> unplaced;
  const std::vector<Device>& devices = problem.cluster.nodes[n].devices;
  auto cost = [&](size_t g) { return devices[g].compute_cost > 0 ? devices[g].compute_cost : 1.0; };
  for (ExpertIndex x : rest) {
    const uint64_t bytes = model.expert_bytes(x);
    // The device that would finish its share soonest with x added: the
    // least-loaded one when the node's devices are equally fast.
    int best = -1;
    double best_finish = 0.0;
    for (size_t g = 0; g < devs.size(); ++g) {
      if (devs[g].free_bytes < bytes) continue;
      const double finish = (devs[g].load + f[x]) * cost(g);
      if (best < 0 ||
          std::make_tuple(finish, -static_cast<double>(devs[g].free_bytes)) <
              std::make_tuple(best_finish, -static_cast<double>(devs[best].free_bytes))) {
        best = static_cast<int>(g);
        best_finish = finish;
      }
    }
    if (best < 0) {
      unplaced.push_back(x);
    } else {
      put(devs[best], x, bytes, f[x]);
    }
  }
  return unplaced;
}

// True when the hints place every expert of the set within device budgets.
bool use_hints(const Problem& problem, const std::vector<ExpertIndex>& set,
               const std::vector<int32_t>& hint, const std::vector<DeviceState>& devs) {
  std::vector<uint64_t> free;
  for (const DeviceState& d : devs) free.push_back(d.free_bytes);
  for (ExpertIndex x : set) {
    const int32_t g = hint[x];
    const uint64_t bytes = problem.model.expert_bytes(x);
    if (g < 0 || static_cast<size_t>(g) >= free.size() || free[g] < bytes) return false;
    free[g] -= bytes;
  }
  return true;
}

bool node_has(const std::vector<DeviceState>& devs, ExpertIndex x) {
  for (const DeviceState& d : devs) {
    if (std::find(d.ids.begin(), d.ids.end(), x) != d.ids.end()) return true;
  }
  return false;
}

// Unequal sizes only: finds a home for a sole copy that fragmentation left out.
Status place_sole_copy(const Problem& problem, ClusterState& state, std::vector<int32_t>& count,
                       ExpertIndex x) {
  const ModelShape& model = problem.model;
  const uint64_t bytes = model.expert_bytes(x);
  const auto& counts = problem.activations.counts;
  // A device with room, on the node that uses x most.
  int best_n = -1, best_g = -1;
  for (size_t m = 0; m < state.size(); ++m) {
    if (node_has(state[m], x)) continue;
    for (size_t g = 0; g < state[m].size(); ++g) {
      if (state[m][g].free_bytes < bytes) continue;
      if (best_n < 0 || counts[m][x] > counts[best_n][x]) {
        best_n = static_cast<int>(m);
        best_g = static_cast<int>(g);
      }
    }
  }
  if (best_n < 0) {
    // Make room by evicting the least-used replicas of one device; pick the
    // device where that loses the fewest activations.
    double best_loss = std::numeric_limits<double>::infinity();
    std::vector<ExpertIndex> best_evict;
    for (size_t m = 0; m < state.size(); ++m) {
      if (node_has(state[m], x)) continue;
      for (size_t g = 0; g < state[m].size(); ++g) {
        std::vector<ExpertIndex> replicas;
        for (ExpertIndex y : state[m][g].ids) {
          if (count[y] >= 2) replicas.push_back(y);
        }
        std::sort(replicas.begin(), replicas.end(), [&](ExpertIndex a, ExpertIndex b) {
          return counts[m][a] != counts[m][b] ? counts[m][a] < counts[m][b] : a < b;
        });
        uint64_t room = state[m][g].free_bytes;
        double loss = 0.0;
        std::vector<ExpertIndex> evict;
        for (ExpertIndex y : replicas) {
          if (room >= bytes) break;
          room += model.expert_bytes(y);
          loss += counts[m][y];
          evict.push_back(y);
        }
        if (room >= bytes && loss < best_loss) {
          best_loss = loss;
          best_n = static_cast<int>(m);
          best_g = static_cast<int>(g);
          best_evict = evict;
        }
      }
    }
    if (best_n < 0) {
      return resource_exhausted("could not pack every expert once onto the devices: " +
                                describe_expert(model, x) + " (" + std::to_string(bytes) +
                                " bytes) fits on no device, even after evicting replicas; "
                                "memory is too fragmented for these expert sizes");
    }
    DeviceState& dev = state[best_n][best_g];
    for (ExpertIndex y : best_evict) {
      dev.ids.erase(std::find(dev.ids.begin(), dev.ids.end(), y));
      dev.free_bytes += model.expert_bytes(y);
      dev.load -= counts[best_n][y];
      --count[y];
    }
  }
  put(state[best_n][best_g], x, bytes, counts[best_n][x]);
  ++count[x];
  return Status::ok();
}

}  // namespace

uint64_t set_bytes(const ModelShape& model, const std::vector<ExpertIndex>& set) {
  uint64_t bytes = 0;
  for (ExpertIndex x : set) bytes += model.expert_bytes(x);
  return bytes;
}

Result<Placement> pack_onto_devices(const Problem& problem, const Capacity& capacity,
                                    const NodeSets& sets, std::string method,
                                    const DeviceHints* hints) {
  const ModelShape& model = problem.model;
  if (sets.size() != problem.cluster.nodes.size()) {
    return internal_error("packing: got sets for " + std::to_string(sets.size()) + " nodes, the " +
                          "cluster has " + std::to_string(problem.cluster.nodes.size()));
  }
  ClusterState state = initial_state(problem, capacity);
  std::vector<int32_t> current_device(model.n_experts_total(), -1);
  std::vector<std::pair<size_t, ExpertIndex>> unplaced;
  const ClusterState empty = state;
  for (size_t n = 0; n < sets.size(); ++n) {
    std::vector<ExpertIndex> left =
        pack_node(problem, capacity, n, sets[n], state[n], current_device);
    if (!left.empty() && hints != nullptr && use_hints(problem, sets[n], (*hints)[n], empty[n])) {
      state[n] = empty[n];
      for (ExpertIndex x : sets[n]) {
        put(state[n][(*hints)[n][x]], x, problem.model.expert_bytes(x),
            problem.activations.counts[n][x]);
      }
      left.clear();
    }
    for (ExpertIndex x : left) unplaced.emplace_back(n, x);
  }
  if (!unplaced.empty()) {
    if (capacity.slot_based) {
      return internal_error("packing: the set of node '" +
                            problem.cluster.nodes[unplaced.front().first].id +
                            "' exceeds its slots (policy bug)");
    }
    std::vector<int32_t> count(model.n_experts_total(), 0);
    for (const auto& node : state) {
      for (const DeviceState& d : node) {
        for (ExpertIndex x : d.ids) ++count[x];
      }
    }
    const auto& counts = problem.activations.counts;
    std::sort(unplaced.begin(), unplaced.end(), [&](const auto& a, const auto& b) {
      return counts[a.first][a.second] > counts[b.first][b.second];
    });
    for (const auto& [n, x] : unplaced) {
      if (count[x] > 0) continue;  // a replica that did not fit: dropped
      DMOE_RETURN_IF_ERROR(place_sole_copy(problem, state, count, x));
    }
  }
  Placement placement = empty_placement(problem.cluster);
  for (size_t n = 0; n < state.size(); ++n) {
    for (size_t g = 0; g < state[n].size(); ++g) {
      std::vector<ExpertIndex>& ids = state[n][g].ids;
      std::sort(ids.begin(), ids.end());
      placement.experts[n][g] = std::move(ids);
    }
  }
  placement.method = std::move(method);
  return placement;
}

}  // namespace dancemoe::placement
