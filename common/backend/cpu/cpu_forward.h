// CpuForward: the forward pass's compute on the CPU kernels
// (kernels/kernels.h) and a ThreadPool -- the default ForwardEngine
// (common/inference/forward_engine.h) and the reference the other backends
// are checked against.
//
// The blocks each layer's config selects (model_config.h): grouped attention
// with its options (q/k/v/o biases, q/k norms, partial rotary, sliding
// window, sinks) or latent attention (MLA, cpu_latent_attention.cpp); the
// router with its scoring, biases and groups (common/inference/routing.h),
// shared experts and dense MLPs. Matrix products are split across the pool
// by output rows; attention by (token, head). Several sequences may share a
// batch (begin_sequences): every row has its sequence's cache and position,
// attention reads each row's own cache, and everything else runs over all
// rows at once. bf16 compute mode rounds activations to bf16 before
// each bf16-weight product, except the router's, which always sees f32.
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
#include "common/inference/rope.h"
#include "common/model/model_config.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe::backend {

class CpuForward final : public ForwardEngine {
 public:
  // `kv_element`: what its caches store (--kv-type; host_kv_element).
  CpuForward(const ModelConfig& config, const DenseWeights& weights, ComputePrecision precision,
             ThreadPool& pool, KvElement kv_element = KvElement::kF32);

  std::string describe() const override;
  int64_t max_batch_tokens() const override;
  Result<KvCache> new_cache(int64_t capacity) override;
  int64_t cache_bytes_per_position() const override {
    return host_kv_bytes_per_position(config_, kv_element_);
  }

  Status begin(std::span<const int32_t> tokens, KvCache& cache) override;
  Status attention(int64_t layer, KvCache& cache) override;
  Status moe(int64_t layer, MoeExecutor& executor, const RoutingObserver& observer) override;
  Status dense_mlp(int64_t layer) override;
  Status finish(int64_t first_row, int64_t n_rows, float* logits) override;

  bool batches_sequences() const override { return true; }
  Status begin_sequences(std::span<const SequenceRows> sequences) override;
  Status attention_sequences(int64_t layer) override;
  Status finish_rows(std::span<const int64_t> rows, float* logits) override;
  bool can_suspend() const override { return true; }
  void suspend() override;
  void resume() override;

 private:
  // Grows a scratch vector to at least n values (never shrinks it).
  static void grow(std::vector<float>* v, int64_t n);
  // One sequence's rows [first_row, first_row + n_rows) of the batch, at
  // positions pos0 ... of its cache.
  struct Segment {
    int64_t first_row = 0;
    int64_t n_rows = 0;
    KvCache* cache = nullptr;
    int64_t pos0 = 0;
  };

  void prepare(int64_t n_tokens, int64_t capacity);
  void norm_rows(const float* weight);
  // y[0, n_) = x W^T over the pool, by chunks of rows (y: [n_, y_stride]).
  void project(const kernels::WeightView& w, const ActivationsView& x, float* y, int64_t y_stride,
               WeightPath path = WeightPath::kFastest);
  // Rotates the leading rope_dim dimensions of each of n_heads heads of
  // width `stride` in x (one token's), with row t of the rope tables.
  void rotate(float* x, int64_t n_heads, int64_t stride, int64_t t) const;
  // Grouped attention, in four steps.
  void project_qkv(int64_t layer);
  void position_and_cache(int64_t layer);
  void attend(int64_t layer);
  // attn_ through o_proj (+ its bias), added into the residual stream h_.
  void project_out(int64_t layer);
  // Multi-head latent attention (cpu_latent_attention.cpp): projections
  // over every row, then the attention of each segment.
  Status latent_attention(int64_t layer);
  void latent_absorbed(int64_t layer, const Segment& s);
  void latent_expanded(int64_t layer, const Segment& s);
  // The shared expert of an MoE layer, added into h_ (weight 1, or its
  // sigmoid gate per token).
  void shared_expert(int64_t layer);

  const ModelConfig& config_;
  const DenseWeights& weights_;
  ComputePrecision precision_;
  KvElement kv_element_;
  ThreadPool& pool_;
  CpuExpertEngine dense_mlp_;
  int64_t n_ = 0;                     // tokens of the current batch
  std::vector<Segment> segments_;     // the sequences of the current batch
  std::vector<int32_t> row_segment_;  // [n_tokens] index into segments_
  std::vector<int64_t> finish_rows_;  // finish()'s rows
  std::vector<float> rope_cos_part_;  // one segment's rope tables
  std::vector<float> rope_sin_part_;

  RopeFrequencies rope_;  // inv_freq [rope_dim / 2], attention factor
  float softmax_scale_ = 1.0f;
  std::vector<float> rope_cos_;  // [n_tokens, rope_dim / 2]
  std::vector<float> rope_sin_;
  std::vector<float> h_;              // [n_tokens, hidden] residual stream
  ActivationBuffer xn_;               // [n_tokens, hidden] normalised
  std::vector<float> q_;              // [n_tokens, q_dim]
  std::vector<float> k_;              // [n_tokens, kv_dim]
  std::vector<float> v_;              // [n_tokens, kv_dim]
  ActivationBuffer attn_;             // [n_tokens, attention_out_dim]
  std::vector<float> proj_;           // [n_tokens, hidden] attention output projection
  std::vector<float> router_logits_;  // [n_tokens, n_experts]
  RoutingDecision routing_;
  std::vector<std::vector<float>> attention_scratch_;  // per thread, [capacity]
  std::vector<ExpertJob> dense_job_;
  // Latent attention scratch (cpu_latent_attention.cpp).
  ActivationBuffer latent_q_;       // [n_tokens, q_lora_rank] normalised q_a output
  ActivationBuffer latent_kv_;      // [n_tokens, kv_lora_rank] normalised latent
  std::vector<float> kv_a_;         // [n_tokens, kv_lora_rank + rope_dim]
  std::vector<float> q_absorbed_;   // [n_tokens, n_heads, kv_lora_rank]
  std::vector<float> o_latent_;     // [n_tokens, n_heads, kv_lora_rank]
  std::vector<float> kv_expanded_;  // [n_ctx, n_heads * (nope + v)] (prefill path)
  std::vector<float> row_scratch_;  // one dequantized weight row per thread
  // A batch set aside by suspend(): what its later layers read. Swapped in
  // and out (no copies); the buffers of whichever batch is not running.
  struct Suspended {
    bool active = false;
    int64_t n = 0;
    std::vector<Segment> segments;
    std::vector<int32_t> row_segment;
    std::vector<float> rope_cos;
    std::vector<float> rope_sin;
    std::vector<float> h;
  } suspended_;
  void swap_batch();
};

}  // namespace dancemoe::backend
