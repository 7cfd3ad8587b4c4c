#include "common/placement/cluster_placement.h"

#include <algorithm>
#include <set>

namespace dancemoe {

std::vector<ExpertRef> NodePlacement::experts() const {
  std::vector<ExpertRef> all;
  for (const DevicePlacement& d : devices)
    all.insert(all.end(), d.experts.begin(), d.experts.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

const NodePlacement* ClusterPlacement::find(std::string_view node_id) const {
  for (const NodePlacement& n : nodes) {
    if (n.node_id == node_id) return &n;
  }
  return nullptr;
}

Status check_against_model(const ClusterPlacement& placement, const ModelConfig& config,
                           std::string_view source) {
  std::set<std::string> ids;
  for (const NodePlacement& n : placement.nodes) {
    if (n.node_id.empty()) {
      return invalid_argument(std::string(source) + ": a node has an empty id");
    }
    if (!ids.insert(n.node_id).second) {
      return invalid_argument(std::string(source) + ": node '" + n.node_id +
                              "' appears more than once");
    }
    for (const DevicePlacement& d : n.devices) {
      for (ExpertRef k : d.experts) {
        const std::string where = std::string(source) + ": node '" + n.node_id + "' device '" +
                                  d.device + "' expert [" + std::to_string(k.layer) + ", " +
                                  std::to_string(k.expert) + "]: ";
        if (k.layer < 0 || k.layer >= config.n_layers) {
          return invalid_argument(where + "layer out of range [0, " +
                                  std::to_string(config.n_layers) + ")");
        }
        if (!config.layer_is_moe[static_cast<size_t>(k.layer)]) {
          return invalid_argument(where + "layer " + std::to_string(k.layer) +
                                  " is a dense layer and has no experts");
        }
        if (k.expert < 0 || k.expert >= config.n_experts) {
          return invalid_argument(where + "expert out of range [0, " +
                                  std::to_string(config.n_experts) + ")");
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace dancemoe
