// CpuForward: the forward pass's compute on the CPU kernels
// (kernels/kernels.h) and a ThreadPool -- the default ForwardEngine
// (common/inference/forward_engine.h) and the reference the other backends
// are checked against.
//
// Matrix products are split across the pool by output rows; attention by
// (token, head). bf16 compute mode rounds activations to bf16 before each
// bf16-weight product, except the router's, which always sees f32.
//
// Dense MLP layers run on an expert engine of its own over the same pool
// (every core of the forward), not on a device's: a dense layer belongs to
// the dense part. Owns scratch buffers sized for the largest batch seen, so
// steady-state decoding allocates nothing. The weights and pool must
// outlive it. Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/inference/activations.h"
#include "common/inference/dense_weights.h"
#include "common/inference/forward_engine.h"
#include "common/model/model_config.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe::backend {

class CpuForward final : public ForwardEngine {
 public:
  CpuForward(const ModelConfig& config, const DenseWeights& weights, ComputePrecision precision,
             ThreadPool& pool);

  std::string describe() const override;
  int64_t max_batch_tokens() const override;
  Result<KvCache> new_cache(int64_t capacity) override;

  Status begin(std::span<const int32_t> tokens, KvCache& cache) override;
  Status attention(int64_t layer, KvCache& cache) override;
  Status moe(int64_t layer, MoeExecutor& executor, const RoutingObserver& observer) override;
  Status dense_mlp(int64_t layer) override;
  Status finish(int64_t first_row, int64_t n_rows, float* logits) override;

 private:
  void prepare(int64_t n_tokens, int64_t capacity);
  void rope_tables(int64_t pos0, int64_t n_tokens);
  void norm_rows(const float* weight);
  // The steps of attention().
  void project_qkv(int64_t layer);
  void position_and_cache(int64_t layer, KvCache& cache);
  void attend(int64_t layer, KvCache& cache);
  void project_out(int64_t layer);

  const ModelConfig& config_;
  const DenseWeights& weights_;
  ComputePrecision precision_;
  ThreadPool& pool_;
  CpuExpertEngine dense_mlp_;
  int64_t n_ = 0;  // tokens of the current batch

  std::vector<double> inv_freq_;  // [head_dim / 2]
  std::vector<float> rope_cos_;   // [n_tokens, head_dim / 2]
  std::vector<float> rope_sin_;
  std::vector<float> h_;              // [n_tokens, hidden] residual stream
  ActivationBuffer xn_;               // [n_tokens, hidden] normalised
  std::vector<float> q_;              // [n_tokens, q_dim]
  std::vector<float> k_;              // [n_tokens, kv_dim]
  std::vector<float> v_;              // [n_tokens, kv_dim]
  ActivationBuffer attn_;             // [n_tokens, q_dim]
  std::vector<float> proj_;           // [n_tokens, hidden] attention output projection
  std::vector<float> router_logits_;  // [n_tokens, n_experts]
  RoutingDecision routing_;
  std::vector<std::vector<float>> attention_scratch_;  // per thread, [capacity]
  std::vector<ExpertJob> dense_job_;
};

}  // namespace dancemoe::backend
