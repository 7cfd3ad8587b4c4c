// The CUDA backend's entry points for the registry
// (common/backend/backend_registry.cpp): probing a GPU, and loading a model
// onto the GPUs of a device list -- the dense part, the workspace and the
// KV cache on the first; each expert on the GPU the placement names --
// after checking the plan against every device's budget and free memory
// (common/backend/memory_plan.h), before allocating anything; then the
// weights are uploaded and the engines built. Compiled only with CUDA.
#pragma once

#include "common/backend/backend_registry.h"

namespace dancemoe::backend::cuda {

// Expert-engine workspace is sized for this many tokens; bigger batches are
// run in pieces (the single-node forward does not use the engine).
constexpr int64_t kExpertEngineTokens = 64;

Result<GpuMemory> probe_cuda_device(int ordinal);

// What the GPU holding the dense part needs beside experts (see
// backend_registry.h, gpu_dense_footprint); it includes expert_overhead().
uint64_t dense_footprint(const ModelConfig& config, const DeviceOptions& options);

// What every GPU of a runtime needs beside its experts' slots: the expert
// pointer tables and the workspace of the engine the backend builds for it
// (backend_registry.h, gpu_expert_overhead).
uint64_t expert_overhead(const ModelConfig& config, const DeviceOptions& options);

Result<DeviceModel> load_cuda_backend(const BackendLoadRequest& request);

}  // namespace dancemoe::backend::cuda
