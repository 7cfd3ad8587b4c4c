// Causal attention over a KV cache on the device, per query token t and
// head h (GQA: kv head kvh = h / (n_heads / n_kv_heads)):
//   n_ctx  = pos0 + t + 1                       (pos0 read from d_pos0)
//   first  = window > 0 ? max(0, n_ctx - window) : 0   (sliding window)
//   s[j]   = scale * q[t, h] . k_cache[j, kvh]   for first <= j < n_ctx
//   out[t, h] = sum_j softmax(s)[j] * v_cache[j, kvh]
//   with sinks (gpt-oss): the softmax also runs over sinks[h], a logit
//   (unscaled) with no value, so the weights sum to less than 1 -- as
//   kernels.h's AttentionArgs defines it for the CPU.
//   q: [n_tokens, q_stride]; k_cache, v_cache: [capacity, kv_stride];
//   out: [n_tokens, out_stride] f32, out_bf16 (optional) its bf16 copy with
//   the same stride -- the input of the output projection.
// head_dim must be even and at most kMaxHeadDim.
//
// Both kernels use an online (running max) softmax in f32, so the order of
// the sums differs from the CPU's two-pass softmax: parity to a tolerance.
//   attention_decode:  one block per (token, head), its warps split the
//                      positions; for a few query tokens against a long cache.
//                      With `partials` (flash-decoding), kDecodeSplits blocks
//                      per (token, head) take a share of the positions each
//                      and a second launch combines their softmax states.
//   attention_prefill: one block per (head, 8 consecutive query tokens), one
//                      warp per token, the tokens sharing each 32-position K/V
//                      tile staged in shared memory; for prompt batches.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

constexpr int64_t kMaxHeadDim = 256;
constexpr int kDecodeSplits = 16;

struct AttentionArgs {
  const float* q = nullptr;
  int64_t q_stride = 0;
  const float* k_cache = nullptr;
  const float* v_cache = nullptr;
  int64_t kv_stride = 0;
  const int32_t* d_pos0 = nullptr;
  int64_t n_tokens = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;
  int64_t window = 0;            // 0: every position; else the last `window` ones
  const float* sinks = nullptr;  // [n_heads] or null
  float* out = nullptr;
  int64_t out_stride = 0;
  uint16_t* out_bf16 = nullptr;
  // attention_decode's scratch, decode_partial_floats(n_tokens, n_heads,
  // head_dim) floats; null: one block per (token, head), no split.
  float* partials = nullptr;
};

int64_t decode_partial_floats(int64_t n_tokens, int64_t n_heads, int64_t head_dim);

void attention_decode(const AttentionArgs& args, Stream stream);
void attention_prefill(const AttentionArgs& args, Stream stream);
// Picks one of the two by the number of query tokens.
void attention(const AttentionArgs& args, Stream stream);

}  // namespace dancemoe::kernels::cuda
