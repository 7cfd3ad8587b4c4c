#include "common/backend/cuda/cuda_backend.h"

#include <algorithm>

#include "common/backend/cuda/cuda_device.h"
#include "common/backend/cuda/cuda_expert_engine.h"
#include "common/backend/cuda/cuda_forward.h"
#include "common/backend/cuda/device_weights.h"
#include "common/backend/memory_plan.h"

namespace dancemoe::backend::cuda {

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
  auto index_of = [&](int ordinal) -> int {
    const auto it = std::find(ordinals.begin(), ordinals.end(), ordinal);
    return it == ordinals.end() ? -1 : static_cast<int>(it - ordinals.begin());
  };
  // Checked before any device is opened, so a bad flag is named even on a
  // machine without the device.
  int dense_index = 0;
  if (options.dense_device) {
    dense_index = index_of(*options.dense_device);
    if (dense_index < 0) {
      return invalid_argument("--dense-device " + std::to_string(*options.dense_device) +
                              " is not among --device " + options.device);
    }
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
  const int64_t kv_tokens =
      options.kv_cache_tokens > 0
          ? options.kv_cache_tokens
          : std::min<int64_t>(
                config.max_position_embeddings > 0 ? config.max_position_embeddings : 4096, 4096);
  const int64_t engine_tokens = std::min(kExpertEngineTokens, options.max_batch_tokens);

  // The plan (common/backend/memory_plan.h): what each device will hold,
  // checked against every device's budget and free memory.
  PlanRequest plan_request;
  for (const std::shared_ptr<CudaDevice>& device : devices) {
    plan_request.devices.push_back(
        {device->ordinal(), device->label(), device->budget_bytes(), device->free_bytes()});
  }
  plan_request.dense_index = dense_index;
  plan_request.sizes.dense_bytes = DeviceWeights::dense_bytes(config);
  plan_request.sizes.expert_bytes = DeviceWeights::expert_bytes(config);
  plan_request.sizes.kv_cache_bytes = CudaForward::kv_cache_bytes(config, kv_tokens);
  plan_request.sizes.forward_workspace_bytes =
      CudaForward::workspace_bytes(config, options.max_batch_tokens);
  plan_request.sizes.expert_workspace_bytes =
      CudaExpertEngine::workspace_bytes(config, engine_tokens);
  plan_request.resident = request.resident;
  plan_request.expert_ordinals = request.expert_devices;
  plan_request.device_text = options.device;
  DMOE_ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(plan_request));

  UploadPlan upload;
  upload.config = &config;
  upload.dense = request.dense;
  upload.experts = request.experts;
  upload.resident = request.resident;
  upload.expert_device = plan.expert_index;
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
    model.description += (d ? "; " : "") + devices[d]->label() + ": " + plan.devices[d].describe();
  }
  return model;
}

}  // namespace dancemoe::backend::cuda
