// ForwardEngine: the compute of the forward pass on one backend (the CPU
// kernels with a thread pool, or a CUDA device). The backend seam of the
// model: Transformer (common/inference/transformer.h) owns the control flow --
// batches, layers in order, dense vs MoE layers, which logits are wanted,
// the routing observer -- and calls an engine for each stage, so model code
// never names a device. Engines are made by the registry
// (common/backend/backend_registry.h); the CPU engine is
// common/backend/cpu/cpu_forward.h.
//
// One batch of tokens at positions cache.n_past() ... :
//   begin(tokens, cache)          h = embed(tokens)
//   attention(layer, cache)       h += o(attention(rope(qk_norm(q, k)), v))  of rmsnorm(h);
//                                 writes the batch's keys and values into the cache
//   moe(layer, executor, obs)     x = rmsnorm(h); routing = route(router x);
//                                 h += the chosen experts of x, weighted.
//                                 The executor computes the experts unless the
//                                 engine was built to hold every expert itself
//                                 (then obs may see the routing at finish()).
//   dense_mlp(layer)              h += down(silu(gate x) * up x), x = rmsnorm(h)
//   finish(first, n_rows, out)    out = lm_head(rmsnorm(h[first .. first + n_rows)))
//                                 ([n_rows, vocab] host f32; n_rows may be 0);
//                                 when it returns the batch is complete.
// The Transformer advances cache.n_past() between the last layer and
// finish(). An engine owns its activations and scratch: buffers are sized
// once (GPU) or grow to the largest batch seen (CPU), so steady-state
// decoding allocates nothing.
//
// Several sequences in one batch (continuous batching): an engine whose
// batches_sequences() is true also runs
//   begin_sequences(seqs)         h = embed(every sequence's tokens, in order);
//                                 row r belongs to the sequence whose tokens it is
//   attention_sequences(layer)    attention of each sequence's rows against its
//                                 own cache (positions cache->n_past() ...);
//                                 projections and norms over all rows together
//   moe / dense_mlp               over all rows together, as above: one routing
//                                 pass, each expert once over every row routed to it
//   finish_rows(rows, out)        out = lm_head(rmsnorm(h[rows[i]])) per i
// The Transformer advances each cache between the last layer and
// finish_rows(). An engine that cannot (the CUDA engine) keeps the defaults,
// and the Transformer runs the sequences one after another instead.
//
// A batch paused between two layers (Transformer::set_layer_hook): an engine
// whose can_suspend() is true sets the running batch aside with suspend() --
// its rows' hidden states and sequences, everything a later layer reads --
// runs any other complete forward, and takes the first batch back with
// resume(), which then goes on with its next layer as if nothing had run in
// between. One level: suspend() twice without resume() is a programming error.
//
// Not thread-safe: one forward at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "common/base/status.h"
#include "common/inference/kv_cache.h"
#include "common/inference/moe_executor.h"
#include "common/inference/routing.h"

namespace dancemoe {

// One sequence's share of a multi-sequence batch: its new tokens, run at
// positions cache->n_past() ... against its own cache.
struct SequenceRows {
  std::span<const int32_t> tokens;
  KvCache* cache = nullptr;
};

class ForwardEngine {
 public:
  virtual ~ForwardEngine() = default;

  // For logs: "cpu (avx512, 16 threads)", "cuda:0 (NVIDIA H100 80GB HBM3)".
  virtual std::string describe() const = 0;
  // Longest batch begin() accepts; the Transformer splits longer prompts.
  virtual int64_t max_batch_tokens() const = 0;
  // A cache for `capacity` positions, kept where this engine computes.
  virtual Result<KvCache> new_cache(int64_t capacity) = 0;
  // Bytes one position of such a cache takes (KV budgets).
  virtual int64_t cache_bytes_per_position() const = 0;

  virtual Status begin(std::span<const int32_t> tokens, KvCache& cache) = 0;
  virtual Status attention(int64_t layer, KvCache& cache) = 0;
  virtual Status moe(int64_t layer, MoeExecutor& executor, const RoutingObserver& observer) = 0;
  virtual Status dense_mlp(int64_t layer) = 0;
  virtual Status finish(int64_t first_row, int64_t n_rows, float* logits) = 0;

  // Multi-sequence batches; see above. The defaults refuse.
  virtual bool batches_sequences() const { return false; }
  virtual Status begin_sequences(std::span<const SequenceRows> sequences);
  virtual Status attention_sequences(int64_t layer);
  virtual Status finish_rows(std::span<const int64_t> rows, float* logits);

  // Pausing a batch between layers; see above. The defaults cannot.
  virtual bool can_suspend() const { return false; }
  virtual void suspend() {}
  virtual void resume() {}
};

}  // namespace dancemoe
