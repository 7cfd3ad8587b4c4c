// Transformer: the forward pass of a decoder-only MoE model.
//
//   h = embed(tokens)
//   for each layer l:
//     h += o_proj(attention(rope(qk_norm(q, k)), v, KV cache))   of rmsnorm(h)
//     x  = rmsnorm(h)
//     MoE layer:   routing = route(router_l x); h += MoeExecutor(l, x, routing)
//     dense layer: h += down(silu(gate x) * up x)
//   logits = lm_head(rmsnorm(h))
//
// Prefill runs the prompt tokens as one batch (split into batches of the
// engine's max_batch_tokens() when longer); decode runs one token against
// the KV cache. This class is the model's control flow; the compute of each
// stage is a backend's ForwardEngine (common/inference/forward_engine.h): the
// CPU kernels and a thread pool, or a GPU engine from the backend registry. The routing decision is
// made in the forward pass and computing the chosen experts is the MoeExecutor's business.
//
// Not thread-safe: one Transformer runs one forward at a time. The weights,
// executor, computer and pool must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/inference/compute_precision.h"
#include "common/inference/forward_engine.h"
#include "common/inference/kv_cache.h"
#include "common/inference/moe_executor.h"
#include "common/inference/routing.h"
#include "common/model/model_config.h"

namespace dancemoe {

enum class LogitsMode { kNone, kLast, kAll };

class Transformer {
 public:
  // A backend's forward (common/backend: cpu/cpu_forward.h, or a GPU's from
  // the registry), computing with `precision`.
  Transformer(const ModelConfig& config, std::unique_ptr<ForwardEngine> engine, MoeExecutor& moe,
              ComputePrecision precision);
  ~Transformer();

  const ModelConfig& config() const { return config_; }
  ComputePrecision precision() const { return precision_; }
  // Where the forward runs, for logs: "cpu (avx512, 16 threads)", "cuda:0 (...)".
  std::string description() const { return engine_->describe(); }

  // Runs `tokens` at positions cache.n_past() ... and advances the cache.
  // *logits becomes [n, vocab] with n = 0, 1 (last token) or tokens.size().
  // On error the cache is left at its previous length.
  Status forward(std::span<const int32_t> tokens, KvCache& cache, LogitsMode mode,
                 std::vector<float>* logits);

  void set_routing_observer(RoutingObserver observer) { observer_ = std::move(observer); }

  // A cache kept where the backend computes.
  Result<KvCache> new_cache(int64_t capacity) const;

 private:
  Status run_batch(std::span<const int32_t> tokens, KvCache& cache, int64_t first_row,
                   int64_t n_rows, float* logits);

  const ModelConfig& config_;
  std::unique_ptr<ForwardEngine> engine_;
  MoeExecutor& moe_;
  ComputePrecision precision_;
  RoutingObserver observer_;
};

}  // namespace dancemoe
