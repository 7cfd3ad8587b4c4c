// The backend registry: which compute backends this build has, and the one
// place that turns a device selection (common/backend/device_options.h) into
// a backend's engines for a loaded model. The CPU backend is what
// Transformer and ExpertComputer build by default; GPU backends come from
// here, so nothing outside common/backend/<backend>/ names a GPU API.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/backend/device_options.h"
#include "common/backend/expert_engine.h"
#include "common/backend/forward_engine.h"
#include "common/model/dense_weights.h"
#include "common/model/expert_store.h"
#include "common/model/model_config.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe::backend {

struct BackendLoadRequest {
  const ModelConfig* config = nullptr;
  const DenseWeights* dense = nullptr;
  const ExpertStore* experts = nullptr;
  std::vector<ExpertRef> resident;  // the experts to place on the devices
  // GPU ordinal of each resident expert (the placement's device); empty:
  // the backend spreads them over the selected devices within their budgets.
  std::vector<int> expert_devices;
  ThreadPool* pool = nullptr;  // CPU fallback for experts no device holds
  ComputePrecision precision = ComputePrecision::kBF16;
  DeviceOptions options;
  LoadProgress progress;  // over the bytes copied to the devices
};

// A loaded model's engines on a device backend. They share the device
// state (weights, streams), which lives as long as either does.
struct DeviceModel {
  std::unique_ptr<ForwardEngine> forward;
  std::unique_ptr<ExpertEngine> experts;
  std::string description;  // e.g. "cuda:0 (NVIDIA H100 80GB HBM3): dense + 512 experts"
};

// "cpu", plus "cuda" when this build has the CUDA backend.
std::vector<std::string> compiled_backends();

// Builds the GPU backend that request.options.device selects (not "cpu").
// unavailable when this build or machine has no such device; resource_exhausted
// (naming the device, the bytes wanted and the bytes free) when it lacks memory.
Result<DeviceModel> load_device_backend(const BackendLoadRequest& request);

}  // namespace dancemoe::backend
