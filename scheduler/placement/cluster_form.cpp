#include "scheduler/placement/cluster_form.h"

#include <algorithm>

namespace dancemoe::placement {

ClusterPlacement to_cluster_placement(const Problem& problem, const Placement& placement,
                                      uint64_t version) {
  ClusterPlacement out{version, {}};
  for (size_t n = 0; n < problem.cluster.nodes.size(); ++n) {
    const Node& node = problem.cluster.nodes[n];
    NodePlacement np{node.id, "", {}};
    for (size_t g = 0; g < node.devices.size(); ++g) {
      DevicePlacement dp{node.devices[g].id, {}};
      if (n < placement.experts.size() && g < placement.experts[n].size()) {
        for (ExpertIndex x : placement.experts[n][g]) {
          dp.experts.push_back({problem.model.layer_of(x), problem.model.expert_in_layer(x)});
        }
      }
      np.devices.push_back(std::move(dp));
    }
    out.nodes.push_back(std::move(np));
  }
  return out;
}

Result<Placement> from_cluster_placement(const Problem& problem,
                                         const ClusterPlacement& placement) {
  Placement out = empty_placement(problem.cluster);
  const ModelShape& model = problem.model;
  for (const NodePlacement& np : placement.nodes) {
    const std::string path = "placement." + np.node_id;
    const auto& nodes = problem.cluster.nodes;
    auto node = std::find_if(nodes.begin(), nodes.end(),
                             [&](const Node& candidate) { return candidate.id == np.node_id; });
    if (node == nodes.end()) {
      return invalid_argument(path + ": no node with id '" + np.node_id + "' in the input's nodes");
    }
    for (const DevicePlacement& dp : np.devices) {
      const std::string dpath = path + "." + dp.device;
      auto device =
          std::find_if(node->devices.begin(), node->devices.end(),
                       [&](const Device& candidate) { return candidate.id == dp.device; });
      if (device == node->devices.end()) {
        return invalid_argument(dpath + ": node '" + np.node_id + "' has no device '" + dp.device +
                                "'");
      }
      std::vector<ExpertIndex>& held =
          out.experts[node - nodes.begin()][device - node->devices.begin()];
      for (size_t i = 0; i < dp.experts.size(); ++i) {
        const ExpertRef ref = dp.experts[i];
        if (ref.layer < 0 || ref.layer >= model.n_layers() || ref.expert < 0 ||
            ref.expert >= model.n_experts(ref.layer)) {
          return invalid_argument(dpath + "[" + std::to_string(i) + "]: no expert " +
                                  std::to_string(ref.expert) + " in layer " +
                                  std::to_string(ref.layer) + " of the model");
        }
        held.push_back(model.expert_index(ref.layer, ref.expert));
      }
      std::sort(held.begin(), held.end());
      if (std::adjacent_find(held.begin(), held.end()) != held.end()) {
        return invalid_argument(dpath + ": lists an expert twice");
      }
    }
  }
  out.method = "read from JSON";
  return out;
}

}  // namespace dancemoe::placement
