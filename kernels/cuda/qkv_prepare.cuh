// The step between the q/k/v projections and attention, fused into one
// launch (decode runs it once per layer per token):
//   for each token t (position pos0 + t) and head:
//     q head:  q[t, h]   = rope(norm_q(q[t, h]))                 in place
//     kv head: k_cache[pos0 + t, h] = rope(norm_k(k[t, h]))
//              v_cache[pos0 + t, h] = v[t, h]
//   norm_q / norm_k: per-head RMSNorm with weights [head_dim] (Qwen3), or
//   the identity when the weight pointer is null (no norm, or OLMoE's
//   full-width norm, which the caller runs before with rmsnorm()).
//   q: [n_tokens, q_stride]; k, v: [n_tokens, kv_stride];
//   k_cache, v_cache: [capacity, n_kv_heads * head_dim] of this layer;
//   cos, sin: [n_tokens, rotary_dim / 2] from rope_tables(), each times
//   rope_scale (YaRN's attention factor, as the CPU's rope_tables applies it).
// rope: the leading rotary_dim dims of each head rotate (0: all of
// head_dim; GLM-4.5's partial rotary), the rest pass through. Halves layout:
// x[i] with x[i + r/2]; pairs layout (DeepSeek): x[2i] with x[2i + 1],
// written back as halves -- the CPU forward permutes pairs to halves before
// rotating, and q . k is unchanged since q and k are permuted alike.
// Same operation order as the CPU forward: norm, then rotation, in f32.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

struct QkvPrepareArgs {
  float* q = nullptr;
  int64_t q_stride = 0;
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t kv_stride = 0;
  float* k_cache = nullptr;
  float* v_cache = nullptr;
  const int32_t* d_pos0 = nullptr;
  int64_t n_tokens = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  float eps = 1e-6f;
  const float* cos = nullptr;
  const float* sin = nullptr;
  int64_t rotary_dim = 0;  // even, <= head_dim; 0: head_dim
  bool pairs = false;      // RopeLayout::kPairs
  float rope_scale = 1.0f;
};

void qkv_prepare(const QkvPrepareArgs& args, Stream stream);

}  // namespace dancemoe::kernels::cuda
