#include "edge_node/holders/holder_table.h"

#include <algorithm>

namespace dancemoe::node {

Result<std::shared_ptr<const HolderTable>> HolderTable::build(
    const ClusterPlacement& placement, const std::string& self_id, const ModelConfig& config,
    const std::vector<std::string>& devices) {
  DMOE_RETURN_IF_ERROR(check_against_model(placement, config, "placement"));
  std::shared_ptr<HolderTable> t(new HolderTable());
  t->placement_ = placement;
  // Peers are numbered in node-id order, whatever order the placement lists.
  std::sort(t->placement_.nodes.begin(), t->placement_.nodes.end(),
            [](const NodePlacement& a, const NodePlacement& b) { return a.node_id < b.node_id; });
  t->n_layers_ = config.n_layers;
  t->n_experts_ = config.n_experts;
  const size_t n_slots = static_cast<size_t>(config.n_layers * config.n_experts);
  t->local_.assign(n_slots, 0);
  std::vector<std::vector<int32_t>> holders(n_slots);
  for (const NodePlacement& node : t->placement_.nodes) {
    int32_t peer = -1;
    if (node.node_id != self_id) {
      peer = static_cast<int32_t>(t->peers_.size());
      t->peers_.push_back({node.node_id, node.expert_endpoint});
    }
    if (peer >= 0) {
      for (ExpertRef k : node.experts()) holders[t->index(k.layer, k.expert)].push_back(peer);
      continue;
    }
    for (const DevicePlacement& d : node.devices) {
      const auto it = std::find(devices.begin(), devices.end(), d.device);
      if (it == devices.end()) {
        std::string have;
        for (const std::string& name : devices) have += (have.empty() ? "" : ", ") + name;
        return invalid_argument("placement v" + std::to_string(placement.version) +
                                " puts experts on device '" + d.device + "' of node '" + self_id +
                                "', which has " + (have.empty() ? "no devices" : have));
      }
      const auto device = static_cast<int16_t>(it - devices.begin() + 1);
      for (ExpertRef k : d.experts) t->local_[t->index(k.layer, k.expert)] = device;
    }
  }
  t->holder_start_.assign(n_slots + 1, 0);
  for (size_t i = 0; i < n_slots; ++i) {
    t->holder_start_[i + 1] = t->holder_start_[i] + static_cast<uint32_t>(holders[i].size());
    t->holders_.insert(t->holders_.end(), holders[i].begin(), holders[i].end());
  }
  for (int64_t l = 0; l < config.n_layers; ++l) {
    if (!config.layer_is_moe[static_cast<size_t>(l)]) continue;
    for (int64_t e = 0; e < config.n_experts; ++e) {
      const size_t i = t->index(l, e);
      if (!t->local_[i] && holders[i].empty()) ++t->uncovered_;
    }
  }
  return std::shared_ptr<const HolderTable>(std::move(t));
}

std::shared_ptr<const HolderTable> HolderTable::empty(const ModelConfig& config) {
  Result<std::shared_ptr<const HolderTable>> t = build(ClusterPlacement{}, "", config, {});
  return *t;  // an empty placement always passes check_against_model
}

int32_t HolderTable::peer_index(const std::string& node_id) const {
  for (size_t i = 0; i < peers_.size(); ++i) {
    if (peers_[i].node_id == node_id) return static_cast<int32_t>(i);
  }
  return -1;
}

std::vector<int32_t> HolderTable::local_devices() const {
  std::vector<int32_t> devices;
  for (int16_t d : local_) {
    if (d != 0) devices.push_back(d - 1);
  }
  return devices;
}

std::vector<ExpertRef> HolderTable::local_experts() const {
  std::vector<ExpertRef> keys;
  for (int64_t l = 0; l < n_layers_; ++l) {
    for (int64_t e = 0; e < n_experts_; ++e) {
      if (local_[index(l, e)]) keys.push_back({static_cast<int32_t>(l), static_cast<int32_t>(e)});
    }
  }
  return keys;
}

}  // namespace dancemoe::node
