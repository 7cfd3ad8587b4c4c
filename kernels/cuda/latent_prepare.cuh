// Multi-head latent attention's (MLA, DeepSeek-V2/V3) step between the
// projections and the attention, one launch -- what qkv_prepare is to
// grouped attention, as common/backend/cpu/cpu_latent_attention.cpp does it:
//   for each token t (position pos0 + t):
//     q head h:   q[t, h][nope, nope + rope) = rope(that part)     in place
//     cache row:  cache[pos0 + t] = [rmsnorm(c_t) * norm, rope(kpe_t)]
//   with [c_t, kpe_t] = kv[t] (kv_a_proj_with_mqa's output) and
//   rmsnorm(x) = x / sqrt(mean(x^2) + eps) over the rank values.
//   q: [n_tokens, q_stride], head h at h * (nope + rope): [q_nope, q_pe];
//   kv: [n_tokens, kv_stride], [rank] latent then [rope] shared key;
//   norm: [rank] (kv_a_layernorm); cache: [capacity, rank + rope] of this
//   layer; cos, sin: [n_tokens, rope / 2] from rope_tables(), each times
//   rope_scale (YaRN's attention factor, as the CPU's rope_tables applies it).
// The rotation is qkv_prepare's: pairs layout (DeepSeek) x[2i] with
// x[2i + 1], written back as halves; halves layout x[i] with x[i + r/2].
// Not qkv_prepare itself: there the rotating dimensions lead each head and
// the cached key is a head of q's width; here they trail q's heads, and the
// cached row is a normalised latent followed by one rotated key.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

struct LatentPrepareArgs {
  float* q = nullptr;
  int64_t q_stride = 0;
  const float* kv = nullptr;
  int64_t kv_stride = 0;
  const float* norm = nullptr;
  float eps = 1e-6f;
  float* cache = nullptr;
  const int32_t* d_pos0 = nullptr;
  int64_t n_tokens = 0;
  int64_t n_heads = 0;
  int64_t nope = 0;  // qk_nope_head_dim
  int64_t rope = 0;  // qk_rope_head_dim: even, at most kMaxHeadDim
  int64_t rank = 0;  // kv_lora_rank
  const float* cos = nullptr;
  const float* sin = nullptr;
  bool pairs = true;  // RopeLayout::kPairs
  float rope_scale = 1.0f;
};

void latent_prepare(const LatentPrepareArgs& args, Stream stream);

}  // namespace dancemoe::kernels::cuda
