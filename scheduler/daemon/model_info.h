// What the scheduler knows of the model: its id (nodes with another one are
// refused), which layers are MoE layers, experts per layer, top-k, and the
// exact bytes of each layer's experts -- all from the model's config and
// headers (Checkpoint::open reads no tensor data; a GGUF file's quantized
// sizes included). Nodes may hold experts in another precision when the
// scheduler allows it (expert_types). Each layer's size is what the nodes
// hold: the largest held by any node admitted since start, the model file's
// until the first registers (admit_expert_sizes).
//
// Layer numbering: on the wire and in the database a layer is the model's
// layer index (ExpertRef.layer, ExpertCount.layer), so dense layers keep
// their numbers and never appear. The placement library works on MoE layers
// only; `shape` lists them in model order and `index` maps
// (model layer, expert) to the library's flat expert id.
//
// A plain value; thread-safe to read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/proto/messages.h"
#include "scheduler/placement/types.h"
#include "scheduler/store/store.h"

namespace dancemoe::scheduler {

struct ModelInfo {
  std::string model_id;
  // The format of the scheduler's model file's experts ("bf16", "q4_K", ...).
  std::string expert_type;
  std::filesystem::path dir;
  int32_t n_layers = 0;             // all layers, dense ones included
  std::vector<int32_t> moe_layers;  // model layer index of each MoE layer
  int32_t n_experts = 0;            // per MoE layer
  int32_t n_experts_per_token = 0;  // top-k
  placement::ModelShape shape;      // MoE layers only
  store::CountIndex index;

  static Result<ModelInfo> from_directory(const std::filesystem::path& dir);

  // For benchmarks and tests: a model of this shape without files.
  // `moe_layers` empty means every layer is a MoE layer.
  static ModelInfo synthetic(std::string model_id, int32_t n_layers, int32_t n_experts,
                             int32_t n_experts_per_token, uint64_t expert_bytes,
                             std::vector<int32_t> moe_layers = {});

  // An admitted node holds its experts with these bytes per MoE layer.
  // Packing uses the bytes nodes actually hold: the first node's sizes
  // replace the model file's, later ones can only raise a layer's size (the
  // largest any node admitted since start holds), so packing never overfills
  // a node whatever its precision. Empty `layer_bytes` (a node from before
  // protocol 1.4): the model file's sizes.
  void admit_expert_sizes(const std::vector<uint64_t>& layer_bytes);
  bool sizes_from_nodes = false;            // admit_expert_sizes has been called
  std::vector<uint64_t> file_expert_bytes;  // per MoE layer, set by its first call

  // Flat id of a wire (layer, expert); -1 when it is not an expert of the model.
  int32_t flat(uint32_t layer, uint32_t expert) const { return index.flat(layer, expert); }
  ExpertRef ref(placement::ExpertIndex x) const;
  // "layer 3 expert 17" (model layer numbering).
  std::string describe(placement::ExpertIndex x) const;
};

}  // namespace dancemoe::scheduler
