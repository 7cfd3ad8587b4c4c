// CudaForward: the forward pass on one CUDA device -- the ForwardEngine
// (common/inference/forward_engine.h) of the CUDA backend. Every stage is a
// few kernel launches on the device's stream (kernels/cuda/*.cuh); the
// residual stream, activations and KV cache stay on the device, and the
// host waits once per batch, in finish(), for the logits.
//
// Attention: grouped (q/k/v projections, qkv_prepare, the attention
// kernels) or, for AttentionKind::kLatent, DeepSeek's multi-head latent
// attention over a compressed cache (cuda_latent_attention.h).
//
// MoE layers, two ways:
// - experts_on_device (the device holds every expert, a single-node model):
//   the router, top-k, grouping, grouped expert FFN and combine all run on
//   the device without a host round trip; the routing decisions are copied
//   back asynchronously and handed to the observer in finish().
// - otherwise the routing and the normalised activations come back to the
//   host after the router, the observer sees them, and the MoeExecutor runs
//   the experts (a node's executor sends remote ones to peers and computes
//   the local ones through its ExpertComputer, which may be this backend's
//   CudaExpertEngine); its sum is added to the residual stream on the device.
//
// Decode graphs: with experts_on_device and cuda_graphs, the first one-token
// forward on a KV cache is captured (cudaStreamBeginCapture in begin(),
// instantiated in finish()) and later ones replay it: every kernel reads the
// position from device memory and the token id / logits / routing travel as
// copy nodes from / to page-locked memory, so the graph stays valid for any
// position of that cache. The graph always computes the last logits and
// copies the routing back; a new cache (address or capacity) re-captures.
//
// Memory: the workspace (activations for max_batch_tokens tokens, logits,
// page-locked staging) and one KV cache of kv_cache_tokens positions are
// allocated in create(); the token path allocates nothing. Further KV caches
// (a second live sequence, a longer context) are allocated by new_cache().
//
// Not thread-safe: one forward at a time.
#pragma once

#include <memory>
#include <vector>

#include "common/backend/cuda/cuda_device.h"
#include "common/backend/cuda/device_weights.h"
#include "common/inference/forward_engine.h"
#include "common/model/model_config.h"

namespace dancemoe::backend::cuda {

struct CudaForwardOptions {
  int64_t max_batch_tokens = 512;
  int64_t kv_cache_tokens = 4096;
  bool experts_on_device = false;
  // Decode steps (one token, experts on the device) replay a captured CUDA
  // graph of the whole step: ~230 kernel launches become one.
  bool cuda_graphs = true;
};

class CudaForward final : public ForwardEngine {
 public:
  // Device bytes create() allocates besides the KV cache, for planning.
  static uint64_t workspace_bytes(const ModelConfig& config, int64_t max_batch_tokens);
  static uint64_t kv_cache_bytes(const ModelConfig& config, int64_t tokens);

  // The config and weights must outlive the engine (weights are shared).
  static Result<std::unique_ptr<CudaForward>> create(const ModelConfig& config,
                                                     std::shared_ptr<const DeviceWeights> weights,
                                                     const CudaForwardOptions& options);
  ~CudaForward() override;

  std::string describe() const override;
  int64_t max_batch_tokens() const override { return options_.max_batch_tokens; }
  Result<KvCache> new_cache(int64_t capacity) override;
  int64_t cache_bytes_per_position() const override {
    return static_cast<int64_t>(kv_cache_bytes(config_, 1));
  }

  Status begin(std::span<const int32_t> tokens, KvCache& cache) override;
  Status attention(int64_t layer, KvCache& cache) override;
  Status moe(int64_t layer, MoeExecutor& executor, const RoutingObserver& observer) override;
  Status dense_mlp(int64_t layer) override;
  Status finish(int64_t first_row, int64_t n_rows, float* logits) override;

  struct KvPool;
  struct Buffers;

 private:
  CudaForward(const ModelConfig& config, std::shared_ptr<const DeviceWeights> weights,
              const CudaForwardOptions& options);
  Status allocate();
  // The cache's device storage, or an error when another engine made it.
  Result<float*> cache_base(KvCache& cache) const;
  // Layer `layer`'s part of the current batch's cache: its keys
  // [kv_capacity_, cache_key_dim], then its values (none for MLA).
  float* layer_cache(int64_t layer) const;
  // RMSNorm of hidden-state rows [first_row, first_row + n_rows) of h into
  // xn (f32) and xn_b (bf16), the inputs of the next matrix products.
  void norm_rows(const float* weight, int64_t first_row, int64_t n_rows, kernels::cuda::Stream s);
  // The MoE layer's shared expert (and its gate) into the residual stream.
  void shared_expert(int64_t layer);
  // routed_layer >= 0: the layer's routed experts, with the model's expert
  // activation and biases (gpt-oss); -1: a plain SwiGLU MLP.
  void run_expert_groups(const uint16_t* const* gate, const uint16_t* const* up,
                         const uint16_t* const* down, int64_t n_groups, int64_t inter,
                         const int32_t* ids, const float* weights, int64_t top_k,
                         int64_t routed_layer = -1);

  const ModelConfig& config_;
  std::shared_ptr<const DeviceWeights> weights_;
  std::shared_ptr<CudaDevice> device_;
  CudaForwardOptions options_;
  int device_index_ = 0;
  std::unique_ptr<Buffers> buf_;
  std::shared_ptr<KvPool> kv_pool_;

  int64_t n_ = 0;             // tokens of the current batch
  float* kv_base_ = nullptr;  // the current batch's cache
  int64_t kv_capacity_ = 0;
  // Decode graph state (see above).
  struct Graph;
  std::unique_ptr<Graph> graph_;
  bool capturing_ = false;
  bool replaying_ = false;
  Status end_capture_and_launch();
  RoutingDecision routing_;        // host copy handed to observers / executors
  std::vector<uint8_t> deferred_;  // per layer: routing copied back, observer pending
  const RoutingObserver* deferred_observer_ = nullptr;
};

}  // namespace dancemoe::backend::cuda
