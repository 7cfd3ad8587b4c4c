// Multi-head latent attention (MLA, DeepSeek-V2/V3) on a CUDA device: the
// attention block CudaForward runs for AttentionKind::kLatent, the same
// arithmetic as the CPU's (common/backend/cpu/cpu_latent_attention.cpp):
//
//   q      = q_proj x                     or  q_b(rmsnorm(q_a x))     [H, nope + rope]
//   c, kpe = kv_a_proj_with_mqa x                                     [rank], [rope]
//   cache[pos] = [rmsnorm(c), rope(kpe)]  -- the compressed cache:    [rank + rope]
//   per head h, with W_UK[h] / W_UV[h] the nope / v rows of head h of kv_b:
//     score_j = scale * (q_nope[h] . W_UK[h] c_j + rope(q_pe[h]) . kpe_j)
//     out[h]  = W_UV[h] sum_j softmax(score)_j c_j
//   h += o_proj(out)
//
// Always the absorbed form (kernels/cuda/latent_attention.cuh): q_lat[h] =
// W_UK[h]^T q_nope[h] scores against the cached rows as they are, and
// out[h] = W_UV[h] o_lat[h]; for a prompt too, each token against its own
// causal prefix. The CPU decompresses the cache for a prompt instead (the
// expanded form): the same numbers but for where activations are rounded to
// bf16 (its expanded path rounds the latent before the kv_b product; this
// one keeps it f32, as the CPU's absorbed path does) -- a difference of the
// size of bf16 rounding, inside the forward parity tests' tolerance. The
// absorbed form needs no [n_ctx, n_heads, nope + v] decompression buffer and
// reads kv_b once per 8 tokens instead of once per cached position.
//
// q_a_layernorm and kv_a_layernorm use epsilon 1e-6 (DeepSeek's RMSNorm
// default), not rms_norm_eps, as on the CPU. Stateless; enqueues on the
// given stream and returns (launch errors surface at the caller's next
// device check).
#pragma once

#include <string>

#include "common/backend/cuda/device_weights.h"
#include "common/model/model_config.h"
#include "kernels/cuda/cuda_types.h"

namespace dancemoe::backend::cuda {

// One batch of a sequence's tokens: device pointers into the forward's
// workspace (shapes for n_tokens rows; scratch is overwritten).
struct LatentBatch {
  int64_t n_tokens = 0;
  const uint16_t* x_bf16 = nullptr;  // [n_tokens, hidden] rmsnorm(h), rounded to bf16
  const int32_t* d_pos0 = nullptr;   // the batch's first position
  const float* cos = nullptr;        // [n_tokens, rope / 2] (rope_tables)
  const float* sin = nullptr;
  float rope_scale = 1.0f;  // YaRN's attention factor on cos and sin
  float* cache = nullptr;   // this layer's [capacity, rank + rope]
  float* h = nullptr;       // [n_tokens, hidden] residual stream: += o_proj(attention)
  // scratch
  float* q = nullptr;            // [n_tokens, q_dim]
  float* q_a = nullptr;          // [n_tokens, q_lora_rank] (q_lora_rank > 0)
  uint16_t* q_a_bf16 = nullptr;  // [n_tokens, q_lora_rank] (q_lora_rank > 0)
  float* kv_a = nullptr;         // [n_tokens, rank + rope]
  float* q_lat = nullptr;        // [n_tokens, n_heads, rank + rope]
  float* o_lat = nullptr;        // [n_tokens, n_heads, rank]
  float* attn = nullptr;         // [n_tokens, attention_out_dim]
  uint16_t* attn_bf16 = nullptr;
};

// Enqueues the layer's latent attention for the batch; its cache rows
// [pos0, pos0 + n_tokens) are written first.
void latent_attention(const ModelConfig& config, const DeviceAttention& weights,
                      const LatentBatch& batch, kernels::cuda::Stream stream);

// Why the CUDA kernels cannot run this model's latent attention, naming
// the block and the limit it exceeds; empty when they can (or the model
// does not use latent attention).
std::string latent_attention_unsupported(const ModelConfig& config);

}  // namespace dancemoe::backend::cuda
