// Multi-head latent attention (MLA, DeepSeek-V2/V3), absorbed: attention
// over the compressed cache without decompressing it, per query token t
// (position pos0 + t, pos0 read from d_pos0) and head h, as
// CpuForward::latent_absorbed (common/backend/cpu/cpu_latent_attention.cpp):
//   W_UK[h] = kv_b rows [h (nope + v_dim), h (nope + v_dim) + nope)       [nope, rank]
//   W_UV[h] = kv_b rows [h (nope + v_dim) + nope, (h + 1) (nope + v_dim)) [v_dim, rank]
//   q_lat[t, h] = [W_UK[h]^T q_nope[t, h], q_pe[t, h]]                   [rank + rope]
//   s[j]        = scale * q_lat[t, h] . cache[j]         for 0 <= j <= pos0 + t
//   o_lat[t, h] = sum_j softmax(s)[j] * cache[j][0, rank)                [rank]
//   out[t, h]   = W_UV[h] o_lat[t, h]                                    [v_dim]
//   q: [n_tokens, q_stride], head h at h * (nope + rope): [q_nope, q_pe],
//      q_pe already rotated (latent_prepare.cuh);
//   cache: [capacity, rank + rope] f32, this layer's rows [c_j, kpe_j]
//      (the cache rows are the keys; their first rank columns the values);
//   kv_b: [n_heads * (nope + v_dim), rank] bf16 (kv_b_proj);
//   q_lat: [n_tokens, n_heads, rank + rope], o_lat: [n_tokens, n_heads,
//      rank] f32 scratch the caller provides;
//   out: [n_tokens, out_stride] f32, head h at h * v_dim; out_bf16
//      (optional) its bf16 copy with the same stride, the input of o_proj.
// Every product is f32 with f32 activations (the CPU widens the kv_b rows
// and keeps q, the cache and o_lat in f32 on this path too).
//
// Three launches:
//   absorb q: one block per (head, 8 tokens), a thread per latent column,
//             reading W_UK[h] once for the 8 tokens;
//   attend:   one block per (head, token), the positions in chunks of 256:
//             a warp per position for the scores (coalesced over the row),
//             a thread per value column for the weighted sum; online softmax
//             over the chunks in f32 (a different summation order than the
//             CPU's two passes: parity to a tolerance);
//   absorb out: one block per (head, 8 tokens), a warp per output row of
//             W_UV[h] over the 8 tokens' o_lat in shared memory.
// Not attention.cuh's kernels: DeepSeek's key width rank + rope = 576 is
// above kMaxHeadDim (their per-lane register accumulators and shared
// K/V tiles are sized for 256), the values are a prefix of the keys with a
// width of their own, and the products with kv_b are per head with a
// different input per head, which matmul.cuh's shared-input problems are not.
// Needs rank <= kMaxLatentRank and nope + rope <= kMaxHeadDim.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

constexpr int64_t kMaxLatentRank = 1024;

struct LatentAttentionArgs {
  const float* q = nullptr;
  int64_t q_stride = 0;
  const float* cache = nullptr;
  const uint16_t* kv_b = nullptr;
  const int32_t* d_pos0 = nullptr;
  int64_t n_tokens = 0;
  int64_t n_heads = 0;
  int64_t nope = 0;   // qk_nope_head_dim
  int64_t rope = 0;   // qk_rope_head_dim
  int64_t rank = 0;   // kv_lora_rank
  int64_t v_dim = 0;  // v_head_dim
  float scale = 1.0f;
  float* q_lat = nullptr;
  float* o_lat = nullptr;
  float* out = nullptr;
  int64_t out_stride = 0;
  uint16_t* out_bf16 = nullptr;
};

void latent_attention(const LatentAttentionArgs& args, Stream stream);

}  // namespace dancemoe::kernels::cuda
