#include "scheduler/placement/types.h"

#include <algorithm>
#include <limits>

namespace dancemoe::placement {

ModelShape::ModelShape(std::vector<LayerShape> layers) : layers_(std::move(layers)) {
  offsets_.reserve(layers_.size() + 1);
  offsets_.push_back(0);
  for (const LayerShape& layer : layers_) {
    offsets_.push_back(offsets_.back() + std::max<int32_t>(layer.n_experts, 0));
  }
  layer_of_.resize(offsets_.back());
  for (int32_t l = 0; l < n_layers(); ++l) {
    std::fill(layer_of_.begin() + offsets_[l], layer_of_.begin() + offsets_[l + 1], l);
  }
}

bool ModelShape::uniform_expert_bytes() const {
  for (const LayerShape& layer : layers_) {
    if (layer.expert_bytes != layers_.front().expert_bytes) return false;
  }
  return true;
}

uint64_t ModelShape::total_expert_bytes() const {
  uint64_t total = 0;
  for (const LayerShape& layer : layers_) {
    total += static_cast<uint64_t>(std::max<int32_t>(layer.n_experts, 0)) * layer.expert_bytes;
  }
  return total;
}

uint64_t ModelShape::min_expert_bytes() const {
  uint64_t smallest = std::numeric_limits<uint64_t>::max();
  for (const LayerShape& layer : layers_) smallest = std::min(smallest, layer.expert_bytes);
  return layers_.empty() ? 0 : smallest;
}

std::vector<std::vector<uint8_t>> node_holdings(const Placement& placement,
                                                int32_t n_experts_total) {
  std::vector<std::vector<uint8_t>> holds(placement.experts.size(),
                                          std::vector<uint8_t>(n_experts_total, 0));
  for (size_t n = 0; n < placement.experts.size(); ++n) {
    for (const std::vector<ExpertIndex>& device : placement.experts[n]) {
      for (ExpertIndex x : device) {
        if (x >= 0 && x < n_experts_total) holds[n][x] = 1;
      }
    }
  }
  return holds;
}

Placement empty_placement(const Cluster& cluster) {
  Placement placement;
  placement.experts.resize(cluster.nodes.size());
  for (size_t n = 0; n < cluster.nodes.size(); ++n) {
    placement.experts[n].resize(cluster.nodes[n].devices.size());
  }
  return placement;
}

std::string describe_expert(const ModelShape& model, ExpertIndex x) {
  return "layer " + std::to_string(model.layer_of(x)) + " expert " +
         std::to_string(model.expert_in_layer(x));
}

}  // namespace dancemoe::placement
