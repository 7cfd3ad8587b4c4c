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

class ForwardEngine {
 public:
  virtual ~ForwardEngine() = default;

  // For logs: "cpu (avx512, 16 threads)", "cuda:0 (NVIDIA H100 80GB HBM3)".
  virtual std::string describe() const = 0;
  // Longest batch begin() accepts; the Transformer splits longer prompts.
  virtual int64_t max_batch_tokens() const = 0;
  // A cache for `capacity` positions, kept where this engine computes.
  virtual Result<KvCache> new_cache(int64_t capacity) = 0;

  virtual Status begin(std::span<const int32_t> tokens, KvCache& cache) = 0;
  virtual Status attention(int64_t layer, KvCache& cache) = 0;
  virtual Status moe(int64_t layer, MoeExecutor& executor, const RoutingObserver& observer) = 0;
  virtual Status dense_mlp(int64_t layer) = 0;
  virtual Status finish(int64_t first_row, int64_t n_rows, float* logits) = 0;
};

}  // namespace dancemoe
