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

// One sequence's part of a multi-sequence forward: `tokens` at positions
// cache->n_past() ..., and whether the last token's logits are wanted.
struct SequenceStep {
  std::span<const int32_t> tokens;
  KvCache* cache = nullptr;
  bool logits = false;
};

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

  // Runs several sequences in one batch (continuous batching): attention per
  // sequence against its own cache, everything else -- projections, norms,
  // routing, experts -- over all their rows together, so each expert's
  // weights are read once for all of them (a lone sequence runs as such a
  // batch too). *logits becomes [k, vocab], one row per step with `logits`
  // set, in order. A backend that cannot batch sequences
  // (ForwardEngine::batches_sequences) runs them one after another, with
  // the same results. The caches must be distinct. On error
  // every cache is left at its previous length.
  Status forward_batch(std::span<const SequenceStep> steps, std::vector<float>* logits);
  // Whether forward_batch runs its sequences in one batch.
  bool batches_sequences() const { return engine_->batches_sequences(); }

  void set_routing_observer(RoutingObserver observer) { observer_ = std::move(observer); }

  // Called between two layers of every batched forward_batch (not after the
  // last layer, not from inside itself), on the thread running it, when the
  // engine can set a batch aside (ForwardEngine::can_suspend): the hook may
  // run another complete batch there with forward_between_layers -- new
  // prompts' first tokens need not wait for a long step of every running
  // stream (the node's batch scheduler). It should return at once when it
  // has nothing to do: it runs up to n_layers - 1 times a step.
  void set_layer_hook(std::function<void()> hook) { layer_hook_ = std::move(hook); }
  // forward_batch of `steps` while another batch is paused between two
  // layers: only from the layer hook. The paused batch then goes on exactly
  // as if nothing had run (its caches are not these).
  Status forward_between_layers(std::span<const SequenceStep> steps, std::vector<float>* logits);

  // A cache kept where the backend computes.
  Result<KvCache> new_cache(int64_t capacity) const;
  // Bytes one position of those caches takes (KV budgets).
  int64_t cache_bytes_per_position() const { return engine_->cache_bytes_per_position(); }

 private:
  Status run_batch(std::span<const int32_t> tokens, KvCache& cache, int64_t first_row,
                   int64_t n_rows, float* logits);
  Status check_tokens(std::span<const int32_t> tokens, const KvCache& cache) const;
  Status run_sequences(std::span<const SequenceStep> steps, float* logits);

  const ModelConfig& config_;
  std::unique_ptr<ForwardEngine> engine_;
  MoeExecutor& moe_;
  ComputePrecision precision_;
  RoutingObserver observer_;
  std::function<void()> layer_hook_;
  bool in_layer_hook_ = false;       // the hook is running (no hook inside it)
  std::vector<SequenceRows> rows_;   // forward_batch's sequences
  std::vector<int64_t> logit_rows_;  // and the rows whose logits it wants
  std::vector<int64_t> saved_past_;  // each cache's length before the batch
  std::vector<float> one_logits_;    // the sequential fallback's row
};

}  // namespace dancemoe
