#include "common/backend/cuda/cuda_backend.h"

#include <algorithm>

#include "common/backend/cuda/cuda_device.h"
#include "common/backend/cuda/cuda_expert_engine.h"
#include "common/backend/cuda/cuda_forward.h"
#include "common/backend/cuda/device_weights.h"

namespace dancemoe::backend::cuda {
namespace {

struct DevicePlan {
  uint64_t dense = 0;
  uint64_t experts = 0;
  int64_t n_experts = 0;
  uint64_t kv = 0;
  uint64_t workspace = 0;
  uint64_t total() const { return dense + experts + kv + workspace; }
};

std::string describe_plan(const DevicePlan& p) {
  return "dense weights " + format_bytes(p.dense) + ", " + std::to_string(p.n_experts) +
         " experts " + format_bytes(p.experts) + ", KV cache " + format_bytes(p.kv) +
         ", workspace " + format_bytes(p.workspace);
}

}  // namespace

Result<DeviceModel> load_cuda_backend(const BackendLoadRequest& request,
                                      const std::vector<int>& ordinals) {
  const ModelConfig& config = *request.config;
  const DeviceOptions& options = request.options;
  if (request.precision != ComputePrecision::kBF16) {
    return invalid_argument("--device " + options.device +
                            ": the CUDA backend computes with bf16 activations; use "
                            "--precision bf16 (f32 is the CPU reference mode)");
  }
  const size_t n_devices = ordinals.size();
  if (!options.budget_bytes.empty() && options.budget_bytes.size() != 1 &&
      options.budget_bytes.size() != n_devices) {
    return invalid_argument("--device-budget lists " + std::to_string(options.budget_bytes.size()) +
                            " sizes for " + std::to_string(n_devices) +
                            " devices (give one, or one per device)");
  }
  std::vector<std::shared_ptr<CudaDevice>> devices;
  for (size_t d = 0; d < n_devices; ++d) {
    const uint64_t budget = options.budget_bytes.empty()       ? 0
                            : options.budget_bytes.size() == 1 ? options.budget_bytes[0]
                                                               : options.budget_bytes[d];
    DMOE_ASSIGN_OR_RETURN(std::shared_ptr<CudaDevice> device,
                          CudaDevice::open(ordinals[d], budget));
    devices.push_back(std::move(device));
  }
  auto index_of = [&](int ordinal) -> int {
    const auto it = std::find(ordinals.begin(), ordinals.end(), ordinal);
    return it == ordinals.end() ? -1 : static_cast<int>(it - ordinals.begin());
  };
  int dense_index = 0;
  if (options.dense_device) {
    dense_index = index_of(*options.dense_device);
    if (dense_index < 0) {
      return invalid_argument("--dense-device " + std::to_string(*options.dense_device) +
                              " is not among --device " + options.device);
    }
  }
  const int64_t kv_tokens =
      options.kv_cache_tokens > 0
          ? options.kv_cache_tokens
          : std::min<int64_t>(
                config.max_position_embeddings > 0 ? config.max_position_embeddings : 4096, 4096);
  const int64_t engine_tokens = std::min(kExpertEngineTokens, options.max_batch_tokens);

  // The plan: what each device will hold.
  std::vector<DevicePlan> plan(n_devices);
  DevicePlan& dense_plan = plan[static_cast<size_t>(dense_index)];
  dense_plan.dense = DeviceWeights::dense_bytes(config);
  dense_plan.kv = CudaForward::kv_cache_bytes(config, kv_tokens);
  dense_plan.workspace = CudaForward::workspace_bytes(config, options.max_batch_tokens);
  const uint64_t one_expert = DeviceWeights::expert_bytes(config);
  std::vector<int> expert_device(request.resident.size(), 0);
  if (!request.expert_devices.empty()) {
    if (request.expert_devices.size() != request.resident.size()) {
      return invalid_argument("the expert placement names " +
                              std::to_string(request.expert_devices.size()) + " devices for " +
                              std::to_string(request.resident.size()) + " experts");
    }
    for (size_t i = 0; i < request.resident.size(); ++i) {
      const int d = index_of(request.expert_devices[i]);
      if (d < 0) {
        return invalid_argument("the placement puts expert " +
                                std::to_string(request.resident[i].expert) + " of layer " +
                                std::to_string(request.resident[i].layer) +
                                " on cuda:" + std::to_string(request.expert_devices[i]) +
                                ", which is not among --device " + options.device);
      }
      expert_device[i] = d;
    }
  } else {
    // Fill the devices by remaining budget, largest first (the dense device
    // has the dense part already counted).
    for (size_t i = 0; i < request.resident.size(); ++i) {
      int best = 0;
      int64_t best_left = INT64_MIN;
      for (size_t d = 0; d < n_devices; ++d) {
        const int64_t left = static_cast<int64_t>(devices[d]->budget_bytes()) -
                             static_cast<int64_t>(plan[d].total() + one_expert);
        if (left > best_left) {
          best_left = left;
          best = static_cast<int>(d);
        }
      }
      expert_device[i] = best;
      plan[static_cast<size_t>(best)].experts += one_expert;
      plan[static_cast<size_t>(best)].n_experts += 1;
    }
  }
  if (!request.expert_devices.empty()) {
    for (int d : expert_device) {
      plan[static_cast<size_t>(d)].experts += one_expert;
      plan[static_cast<size_t>(d)].n_experts += 1;
    }
  }
  for (size_t d = 0; d < n_devices; ++d) {
    if (plan[d].n_experts > 0) {
      plan[d].workspace += CudaExpertEngine::workspace_bytes(config, engine_tokens);
    }
    const uint64_t free_now = devices[d]->free_bytes();
    const uint64_t limit = std::min(devices[d]->budget_bytes(), free_now);
    if (plan[d].total() > limit) {
      return resource_exhausted(devices[d]->label() + ": not enough memory for the model: wanted " +
                                format_bytes(plan[d].total()) + " (" + describe_plan(plan[d]) +
                                "), " + format_bytes(free_now) + " free on the device, budget " +
                                format_bytes(devices[d]->budget_bytes()));
    }
  }

  UploadPlan upload;
  upload.config = &config;
  upload.dense = request.dense;
  upload.experts = request.experts;
  upload.resident = request.resident;
  upload.expert_device = expert_device;
  upload.devices = devices;
  upload.dense_device = dense_index;
  upload.progress = request.progress;
  DMOE_ASSIGN_OR_RETURN(std::shared_ptr<const DeviceWeights> weights,
                        DeviceWeights::upload(upload));

  CudaForwardOptions forward_options;
  forward_options.max_batch_tokens = options.max_batch_tokens;
  forward_options.kv_cache_tokens = kv_tokens;
  forward_options.cuda_graphs = options.cuda_graphs;
  forward_options.experts_on_device = !options.experts_via_executor && !request.resident.empty() &&
                                      weights->holds_all_experts(dense_index);
  DeviceModel model;
  DMOE_ASSIGN_OR_RETURN(model.forward, CudaForward::create(config, weights, forward_options));
  DMOE_ASSIGN_OR_RETURN(model.experts,
                        CudaExpertEngine::create(config, weights, *request.pool, engine_tokens));
  for (size_t d = 0; d < n_devices; ++d) {
    model.description += (d ? "; " : "") + devices[d]->label() + ": " + describe_plan(plan[d]);
  }
  return model;
}

}  // namespace dancemoe::backend::cuda
