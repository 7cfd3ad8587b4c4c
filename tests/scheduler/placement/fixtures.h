// Small hand-made placement problems for tests.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "scheduler/placement/types.h"

namespace dancemoe::placement::testing {

// `layers` layers of `experts` experts of `bytes` each; one node per entry of
// `slots_per_device` (a list of device sizes, in experts, for that node);
// counts[n] is the node's flat count vector (zeros if empty).
inline Problem small_problem(int32_t layers, int32_t experts,
                             const std::vector<std::vector<int>>& slots_per_device,
                             const std::vector<std::vector<double>>& counts = {},
                             uint64_t bytes = 1000) {
  Problem p;
  p.model = ModelShape(std::vector<LayerShape>(layers, LayerShape{experts, bytes}));
  for (size_t n = 0; n < slots_per_device.size(); ++n) {
    Node node;
    node.id = std::string(1, static_cast<char>('a' + n));
    node.remote_penalty_s = 0.004;
    for (size_t g = 0; g < slots_per_device[n].size(); ++g) {
      node.devices.push_back(Device{"gpu" + std::to_string(g),
                                    static_cast<uint64_t>(slots_per_device[n][g]) * bytes, 1.0e6});
    }
    p.cluster.nodes.push_back(node);
  }
  p.activations.counts.assign(slots_per_device.size(),
                              std::vector<double>(p.model.n_experts_total(), 0.0));
  for (size_t n = 0; n < counts.size(); ++n) p.activations.counts[n] = counts[n];
  p.activations.window_s = 300;
  p.activations.experts_per_token = 1;
  p.horizon_s = 300;
  return p;
}

inline std::vector<ExpertIndex> node_set(const Placement& placement, size_t n) {
  std::vector<ExpertIndex> all;
  for (const auto& device : placement.experts[n])
    all.insert(all.end(), device.begin(), device.end());
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace dancemoe::placement::testing
