// The per-expert tensors of a checkpoint whose routed experts are stored
// stacked, one tensor per layer and projection (gpt-oss's published layout,
// ModelConfig::stacked_experts): each expert's gate, up and down matrices
// and their biases become TensorLocations with a TensorView (checkpoint.h)
// under the config's per-expert names, so the expert store, the manifest
// and the placement see ordinary experts:
//   gate  = gate_up rows 0, 2, 4 ... of expert e, MXFP4 [inter, hidden]
//   up    = gate_up rows 1, 3, 5 ...,                    [inter, hidden]
//   down  = down rows of expert e,                 MXFP4 [hidden, inter]
//   biases: the even / odd elements of gate_up_bias[e], down_bias[e]
// The stacked tensors are checked first (present, dtype, shape), each error
// naming the tensor and what the config implies.
#pragma once

#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/base/status.h"
#include "common/model/checkpoint.h"
#include "common/model/model_config.h"

namespace dancemoe {

Status add_stacked_expert_views(const ModelConfig& config,
                                const std::vector<std::filesystem::path>& files,
                                std::unordered_map<std::string, TensorLocation>* tensors);

}  // namespace dancemoe
