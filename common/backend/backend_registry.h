// The backend registry: which compute backends this build has, and the one
// place that turns the GPUs of a device list (common/backend/
// device_options.h) into a backend's engines for a loaded model. CPU devices
// need no registry (common/backend/cpu/); GPU backends come from here, so
// nothing outside common/backend/<backend>/ names a GPU API. The runtime
// assembly (common/assembly/model_runtime.h) is the caller.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/backend/device_options.h"
#include "common/inference/dense_weights.h"
#include "common/inference/expert_engine.h"
#include "common/inference/expert_residency.h"
#include "common/inference/expert_store.h"
#include "common/inference/forward_engine.h"
#include "common/model/model_config.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe::backend {

// What a GPU has, read before anything is loaded onto it.
struct GpuMemory {
  std::string label;  // "cuda:0 (NVIDIA H100 80GB HBM3)"
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};

// One GPU of the device list and what this process may use of it.
struct GpuRequest {
  int ordinal = 0;
  uint64_t budget_bytes = 0;  // everything this process may allocate there; 0: all free
  // Of that, for experts: the GPU gets slots for this many bytes of experts
  // (at least the experts it is given at load), so experts can arrive later.
  uint64_t expert_budget_bytes = 0;
};

struct BackendLoadRequest {
  const ModelConfig* config = nullptr;
  const DenseWeights* dense = nullptr;
  const ExpertStore* experts = nullptr;
  // The GPUs in --devices order; the first holds the dense part, the KV
  // cache and the forward's workspace.
  std::vector<GpuRequest> gpus;
  std::vector<ExpertRef> resident;  // the experts the GPUs hold
  std::vector<int> expert_gpus;     // per resident expert: index into gpus
  ThreadPool* pool = nullptr;       // CPU fallback for jobs no GPU holds
  ComputePrecision precision = ComputePrecision::kBF16;
  DeviceOptions options;  // batch and KV sizes, executor path, CUDA graphs
  LoadProgress progress;  // over the bytes copied to the devices
};

// A loaded model's engines on a device backend. They share the device
// state (weights, streams), which lives as long as any engine does.
struct DeviceModel {
  std::unique_ptr<ForwardEngine> forward;
  std::vector<std::unique_ptr<ExpertEngine>> experts;  // one per entry of gpus
  // Per entry of gpus: its copies of the experts the ExpertStore puts on it
  // later (ExpertStore::set_residency).
  std::vector<std::shared_ptr<ExpertResidency>> residency;
  // Another engine for GPU `gpu` (its own stream and workspace), for a
  // thread besides the forward's (the node's expert service workers).
  std::function<Result<std::unique_ptr<ExpertEngine>>(size_t gpu, ThreadPool& cpu_fallback)>
      new_expert_engine;
  std::string description;  // e.g. "cuda:0 (NVIDIA H100 80GB HBM3): dense + 512 experts"
};

// "cpu", plus "cuda" when this build has the CUDA backend.
std::vector<std::string> compiled_backends();

// unavailable when this build has no CUDA backend or this machine no GPU
// `ordinal` (the message names it and what there is).
Result<GpuMemory> probe_gpu(int ordinal);

// Bytes the GPU that holds the dense part needs beside experts: the dense
// part as the backend lays it out, the KV cache of options.kv_cache_tokens
// positions (0: the backend's default) and the workspaces. 0 without a GPU
// backend.
uint64_t gpu_dense_footprint(const ModelConfig& config, const DeviceOptions& options);

// Bytes every GPU of a runtime needs beside its experts' slots (expert
// pointer tables, the expert engine's workspace); part of
// gpu_dense_footprint on the first GPU. 0 without a GPU backend.
uint64_t gpu_expert_overhead(const ModelConfig& config, const DeviceOptions& options);

// Builds the GPU backend for request.gpus (at least one). unavailable when
// this build or machine has no such device; resource_exhausted (naming the
// device, the bytes wanted and the bytes free) when it lacks memory.
Result<DeviceModel> load_device_backend(const BackendLoadRequest& request);

}  // namespace dancemoe::backend
