// Transformer: the forward pass of a decoder-only MoE model on the CPU.
//
//   h = embed(tokens)
//   for each layer l:
//     h += o_proj(attention(rope(qk_norm(q, k)), v, KV cache))   of rmsnorm(h)
//     x  = rmsnorm(h)
//     MoE layer:   routing = route(router_l x); h += MoeExecutor(l, x, routing)
//     dense layer: h += down(silu(gate x) * up x)
//   logits = lm_head(rmsnorm(h))
//
// Prefill runs all prompt tokens as one batch; decode runs one token against
// the KV cache. Matrix products are split across the ThreadPool by output
// rows; attention by (token, head). The routing decision is made here and
// computing the chosen experts is the MoeExecutor's business.
//
// Not thread-safe: one Transformer runs one forward at a time (it owns
// scratch buffers sized for the largest batch seen, so steady-state decoding
// allocates nothing). The weights, executor and pool must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/base/status.h"
#include "common/model/activations.h"
#include "common/model/dense_weights.h"
#include "common/model/expert_compute.h"
#include "common/model/kv_cache.h"
#include "common/model/model_config.h"
#include "common/model/moe_executor.h"
#include "common/model/routing.h"
#include "common/runtime/thread_pool.h"

namespace dancemoe {

enum class LogitsMode { kNone, kLast, kAll };

// Sees every MoE layer's routing decision (activation counting, traces).
using RoutingObserver = std::function<void(int64_t layer, const RoutingDecision& routing)>;

class Transformer {
 public:
  Transformer(const ModelConfig& config, const DenseWeights& weights, MoeExecutor& moe,
              ExpertComputer& computer, ThreadPool& pool);

  const ModelConfig& config() const { return config_; }
  ComputePrecision precision() const { return computer_.precision(); }

  // Runs `tokens` at positions cache.n_past() ... and advances the cache.
  // *logits becomes [n, vocab] with n = 0, 1 (last token) or tokens.size().
  // On error the cache is left at its previous length.
  Status forward(std::span<const int32_t> tokens, KvCache& cache, LogitsMode mode,
                 std::vector<float>* logits);

  void set_routing_observer(RoutingObserver observer) { observer_ = std::move(observer); }

  Result<KvCache> new_cache(int64_t capacity) const;

 private:
  void prepare(int64_t n_tokens, int64_t capacity);
  void rope_tables(int64_t pos0, int64_t n_tokens);
  void attention_block(int64_t layer, int64_t n_tokens, KvCache& cache);
  Status mlp_block(int64_t layer, int64_t n_tokens);
  void compute_logits(int64_t first_row, int64_t n_rows, std::vector<float>* logits);

  const ModelConfig& config_;
  const DenseWeights& weights_;
  MoeExecutor& moe_;
  ExpertComputer& computer_;
  ThreadPool& pool_;
  RoutingObserver observer_;

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

}  // namespace dancemoe
