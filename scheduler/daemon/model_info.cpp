#include "scheduler/daemon/model_info.h"

#include <algorithm>

#include "common/model/checkpoint.h"
#include "kernels/quant_format.h"

namespace dancemoe::scheduler {
namespace {

void build_index(ModelInfo* info) {
  info->index.layer_offset.assign(info->n_layers, -1);
  info->index.layer_experts.assign(info->n_layers, 0);
  int32_t offset = 0;
  for (int32_t layer : info->moe_layers) {
    info->index.layer_offset[layer] = offset;
    info->index.layer_experts[layer] = info->n_experts;
    offset += info->n_experts;
  }
  info->index.n_total = offset;
}

}  // namespace

Result<ModelInfo> ModelInfo::from_directory(const std::filesystem::path& dir) {
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, Checkpoint::open(dir));
  const ModelConfig& config = checkpoint->config();
  ModelInfo info;
  info.model_id = checkpoint->model_id();
  info.expert_type = std::string(kernels::weight_type_name(checkpoint->expert_type()));
  info.dir = dir;
  info.n_layers = static_cast<int32_t>(config.n_layers);
  info.n_experts = static_cast<int32_t>(config.n_experts);
  info.n_experts_per_token = static_cast<int32_t>(config.n_experts_per_token);
  if (info.n_layers > 65535 || info.n_experts > 65535) {
    return invalid_argument(dir.string() + ": " + std::to_string(info.n_layers) + " layers x " +
                            std::to_string(info.n_experts) +
                            " experts do not fit the protocol's 16-bit indices");
  }
  std::vector<placement::LayerShape> layers;
  for (int32_t l = 0; l < info.n_layers; ++l) {
    if (!config.layer_is_moe[l]) continue;
    info.moe_layers.push_back(l);
    // The unit of placement is one expert; the layer's size is its largest
    // expert (they are equal in every supported architecture), so memory is
    // never under-counted.
    uint64_t bytes = 0;
    for (int32_t e = 0; e < info.n_experts; ++e) {
      bytes = std::max(bytes, checkpoint->expert_bytes(l, e));
    }
    layers.push_back({info.n_experts, bytes});
  }
  if (info.moe_layers.empty()) {
    return invalid_argument(dir.string() + "/config.json: the model has no MoE layer to place");
  }
  info.shape = placement::ModelShape(std::move(layers));
  build_index(&info);
  return info;
}

void ModelInfo::admit_expert_sizes(const std::vector<uint64_t>& layer_bytes) {
  std::vector<placement::LayerShape> layers = shape.layers();
  if (!sizes_from_nodes) {
    for (const placement::LayerShape& l : layers) file_expert_bytes.push_back(l.expert_bytes);
  }
  // A node from before 1.4 reports no sizes: it holds the model file's.
  const std::vector<uint64_t>& held = layer_bytes.empty() ? file_expert_bytes : layer_bytes;
  for (size_t i = 0; i < layers.size() && i < held.size(); ++i) {
    layers[i].expert_bytes = sizes_from_nodes ? std::max(layers[i].expert_bytes, held[i]) : held[i];
  }
  sizes_from_nodes = true;
  shape = placement::ModelShape(std::move(layers));
}

ModelInfo ModelInfo::synthetic(std::string model_id, int32_t n_layers, int32_t n_experts,
                               int32_t n_experts_per_token, uint64_t expert_bytes,
                               std::vector<int32_t> moe_layers) {
  ModelInfo info;
  info.model_id = std::move(model_id);
  info.n_layers = n_layers;
  info.n_experts = n_experts;
  info.n_experts_per_token = n_experts_per_token;
  if (moe_layers.empty()) {
    for (int32_t l = 0; l < n_layers; ++l) moe_layers.push_back(l);
  }
  info.moe_layers = std::move(moe_layers);
  std::vector<placement::LayerShape> layers(info.moe_layers.size(),
                                            placement::LayerShape{n_experts, expert_bytes});
  info.shape = placement::ModelShape(std::move(layers));
  build_index(&info);
  return info;
}

ExpertRef ModelInfo::ref(placement::ExpertIndex x) const {
  return {static_cast<uint16_t>(moe_layers[shape.layer_of(x)]),
          static_cast<uint16_t>(shape.expert_in_layer(x))};
}

std::string ModelInfo::describe(placement::ExpertIndex x) const {
  const ExpertRef r = ref(x);
  return "layer " + std::to_string(r.layer) + " expert " + std::to_string(r.expert);
}

}  // namespace dancemoe::scheduler
