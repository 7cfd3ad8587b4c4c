// The CUDA backend's entry point for the registry
// (common/backend/backend_registry.cpp): opens the selected GPUs, plans
// where everything goes -- the dense part, the workspace and the KV cache
// on the dense device; each expert on the device the placement names (or,
// without one, spread over the devices by free budget) -- checks the plan
// against every device's budget and free memory before allocating anything,
// uploads the weights and builds the engines. Compiled only with CUDA.
#pragma once

#include <vector>

#include "common/backend/backend_registry.h"

namespace dancemoe::backend::cuda {

// Expert-engine workspace is sized for this many tokens; bigger batches are
// run in pieces (the single-node forward does not use the engine).
constexpr int64_t kExpertEngineTokens = 64;

Result<DeviceModel> load_cuda_backend(const BackendLoadRequest& request,
                                      const std::vector<int>& ordinals);

}  // namespace dancemoe::backend::cuda
