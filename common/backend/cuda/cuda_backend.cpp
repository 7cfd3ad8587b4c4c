#include "common/backend/cuda/cuda_backend.h"

#include <algorithm>

#include "common/backend/cuda/cuda_device.h"
#include "common/backend/cuda/cuda_expert_engine.h"
#include "common/backend/cuda/cuda_forward.h"
#include "common/backend/cuda/cuda_latent_attention.h"
#include "common/backend/cuda/device_weights.h"
#include "common/backend/memory_plan.h"

namespace dancemoe::backend::cuda {

Result<GpuMemory> probe_cuda_device(int ordinal) {
  DMOE_ASSIGN_OR_RETURN(std::shared_ptr<CudaDevice> device, CudaDevice::open(ordinal, 0));
  return GpuMemory{device->label(), device->info().total_bytes, device->free_bytes()};
}

namespace {

int64_t kv_tokens_for(const ModelConfig& config, const DeviceOptions& options) {
  return options.kv_cache_tokens > 0
             ? options.kv_cache_tokens
             : std::min<int64_t>(
                   config.max_position_embeddings > 0 ? config.max_position_embeddings : 4096,
                   4096);
}

// The ExpertStore's view of one GPU's expert slots.
class GpuResidency final : public ExpertResidency {
 public:
  GpuResidency(std::shared_ptr<const DeviceWeights> weights, int device_index)
      : weights_(std::move(weights)), device_index_(device_index) {}
  Status make_resident(const std::shared_ptr<const ExpertWeights>& expert) override {
    return weights_->install(expert, device_index_);
  }
  void release(const ExpertWeights& expert) override { weights_->release(expert); }

 private:
  std::shared_ptr<const DeviceWeights> weights_;
  int device_index_;
};

}  // namespace

uint64_t expert_overhead(const ModelConfig& config, const DeviceOptions& options) {
  const int64_t engine_tokens = std::min(kExpertEngineTokens, options.max_batch_tokens);
  return DeviceWeights::expert_table_bytes(config) +
         CudaExpertEngine::workspace_bytes(config, engine_tokens);
}

uint64_t dense_footprint(const ModelConfig& config, const DeviceOptions& options) {
  return DeviceWeights::dense_bytes(config) +
         CudaForward::kv_cache_bytes(config, kv_tokens_for(config, options)) +
         CudaForward::workspace_bytes(config, options.max_batch_tokens) +
         expert_overhead(config, options);
}

// The blocks of model_config.h (or their sizes) the CUDA kernels do not
// implement yet, by name; empty when the model runs. A model that needs one
// is refused at load rather than computed wrongly.
std::string missing_cuda_blocks(const ModelConfig& c) {
  std::string missing;
  auto need = [&](const std::string& block) {
    if (!block.empty()) missing += (missing.empty() ? "" : ", ") + block;
  };
  need(latent_attention_unsupported(c));
  return missing;
}

Result<DeviceModel> load_cuda_backend(const BackendLoadRequest& request) {
  const ModelConfig& config = *request.config;
  const DeviceOptions& options = request.options;
  if (const std::string missing = missing_cuda_blocks(config); !missing.empty()) {
    return invalid_argument("--devices " + options.text() + ": " + config.hf_architecture +
                            " uses blocks the CUDA backend does not implement yet (" + missing +
                            "); run it on the CPU devices");
  }
  if (request.precision != ComputePrecision::kBF16) {
    return invalid_argument("--devices " + options.text() +
                            ": the CUDA backend computes with bf16 activations; use "
                            "--precision bf16 (f32 is the CPU reference mode)");
  }
  if (request.gpus.empty()) return invalid_argument("no GPU to load onto");
  const size_t n_devices = request.gpus.size();
  const int dense_index = 0;
  std::vector<std::shared_ptr<CudaDevice>> devices;
  for (const GpuRequest& gpu : request.gpus) {
    DMOE_ASSIGN_OR_RETURN(std::shared_ptr<CudaDevice> device,
                          CudaDevice::open(gpu.ordinal, gpu.budget_bytes));
    devices.push_back(std::move(device));
  }
  const int64_t kv_tokens = kv_tokens_for(config, options);
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
  plan_request.sizes.expert_table_bytes = DeviceWeights::expert_table_bytes(config);
  plan_request.resident = request.resident;
  for (int g : request.expert_gpus) {
    if (g < 0 || static_cast<size_t>(g) >= n_devices) {
      return invalid_argument("an expert is placed on GPU index " + std::to_string(g) + " of " +
                              std::to_string(n_devices));
    }
    plan_request.expert_ordinals.push_back(request.gpus[static_cast<size_t>(g)].ordinal);
  }
  for (const GpuRequest& gpu : request.gpus) {
    plan_request.expert_slots.push_back(static_cast<int64_t>(
        gpu.expert_budget_bytes / std::max<uint64_t>(1, plan_request.sizes.expert_bytes)));
  }
  plan_request.device_text = options.text();
  DMOE_ASSIGN_OR_RETURN(MemoryPlan plan, plan_memory(plan_request));

  UploadPlan upload;
  upload.config = &config;
  upload.dense = request.dense;
  upload.experts = request.experts;
  upload.resident = request.resident;
  upload.expert_device = plan.expert_index;
  upload.devices = devices;
  for (const DevicePlan& d : plan.devices) upload.expert_slots.push_back(d.n_slots);
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
  for (size_t d = 0; d < n_devices; ++d) {
    DMOE_ASSIGN_OR_RETURN(std::unique_ptr<CudaExpertEngine> engine,
                          CudaExpertEngine::create(config, weights, *request.pool, engine_tokens,
                                                   static_cast<int>(d), Budget::kCounted));
    model.experts.push_back(std::move(engine));
  }
  for (size_t d = 0; d < n_devices; ++d) {
    model.residency.push_back(std::make_shared<GpuResidency>(weights, static_cast<int>(d)));
  }
  // The expert service's workers (one engine each, made after load): their
  // workspaces come on top of the budget, which covers the load's engines.
  model.new_expert_engine = [&config, weights, engine_tokens](
                                size_t gpu,
                                ThreadPool& pool) -> Result<std::unique_ptr<ExpertEngine>> {
    DMOE_ASSIGN_OR_RETURN(std::unique_ptr<CudaExpertEngine> engine,
                          CudaExpertEngine::create(config, weights, pool, engine_tokens,
                                                   static_cast<int>(gpu), Budget::kOnTop));
    return std::unique_ptr<ExpertEngine>(std::move(engine));
  };
  for (size_t d = 0; d < n_devices; ++d) {
    model.description += (d ? "; " : "") + devices[d]->label() + ": " + plan.devices[d].describe();
  }
  return model;
}

}  // namespace dancemoe::backend::cuda
