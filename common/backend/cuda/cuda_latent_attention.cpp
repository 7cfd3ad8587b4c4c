#include "common/backend/cuda/cuda_latent_attention.h"

#include "common/inference/rope.h"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/latent_attention.cuh"
#include "kernels/cuda/latent_prepare.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/rmsnorm.cuh"

namespace dancemoe::backend::cuda {
namespace {

namespace kc = kernels::cuda;

// The RMSNorm epsilon of q_a_layernorm and kv_a_layernorm: DeepSeek's code
// builds them with the RMSNorm default, not rms_norm_eps (as the CPU's
// kLatentNormEps).
constexpr float kLatentNormEps = 1e-6f;

}  // namespace

void latent_attention(const ModelConfig& c, const DeviceAttention& w, const LatentBatch& b,
                      kc::Stream s) {
  const int64_t n = b.n_tokens;
  const int64_t H = c.hidden_size;
  const int64_t Q = c.q_dim();
  const int64_t LQ = c.q_lora_rank;
  const int64_t rank = c.kv_lora_rank;
  const int64_t rope = c.rope_dim();
  const int64_t row = rank + rope;  // one cached position
  const int64_t out_dim = c.attention_out_dim();

  // [c, kpe] and q (or q_a's output) from the normalised input, one launch.
  kc::MatmulArgs in;
  in.x_bf16 = b.x_bf16;
  in.x_stride = H;
  in.n_tokens = n;
  in.cols = H;
  in.n_problems = 2;
  in.problems[0] = {w.kv_a, row, nullptr, b.kv_a, row, false};
  in.problems[1] = LQ > 0 ? kc::MatmulProblem{w.q_a, LQ, nullptr, b.q_a, LQ, false}
                          : kc::MatmulProblem{w.q, Q, nullptr, b.q, Q, false};
  kc::matmul(in, s);
  if (LQ > 0) {
    // q_b reads the normalised q_a output rounded to bf16, as the CPU's bf16
    // mode rounds it before that product.
    kc::RmsNormArgs qn;
    qn.x = b.q_a;
    qn.x_stride = LQ;
    qn.weight = w.q_a_norm;
    qn.n_rows = n;
    qn.width = LQ;
    qn.eps = kLatentNormEps;
    qn.out = b.q_a;
    qn.out_stride = LQ;
    qn.out_bf16 = b.q_a_bf16;
    qn.out_bf16_stride = LQ;
    kc::rmsnorm(qn, s);
    kc::MatmulArgs qb;
    qb.x_bf16 = b.q_a_bf16;
    qb.x_stride = LQ;
    qb.n_tokens = n;
    qb.cols = LQ;
    qb.problems[0] = {w.q_b, Q, nullptr, b.q, Q, false};
    kc::matmul(qb, s);
  }

  kc::LatentPrepareArgs prep;
  prep.q = b.q;
  prep.q_stride = Q;
  prep.kv = b.kv_a;
  prep.kv_stride = row;
  prep.norm = w.kv_a_norm;
  prep.eps = kLatentNormEps;
  prep.cache = b.cache;
  prep.d_pos0 = b.d_pos0;
  prep.n_tokens = n;
  prep.n_heads = c.n_heads;
  prep.nope = c.qk_nope_head_dim;
  prep.rope = rope;
  prep.rank = rank;
  prep.cos = b.cos;
  prep.sin = b.sin;
  prep.pairs = c.rope_layout == RopeLayout::kPairs;
  prep.rope_scale = b.rope_scale;
  kc::latent_prepare(prep, s);

  kc::LatentAttentionArgs at;
  at.q = b.q;
  at.q_stride = Q;
  at.cache = b.cache;
  at.kv_b = w.kv_b;
  at.d_pos0 = b.d_pos0;
  at.n_tokens = n;
  at.n_heads = c.n_heads;
  at.nope = c.qk_nope_head_dim;
  at.rope = rope;
  at.rank = rank;
  at.v_dim = c.v_head_dim;
  at.scale = attention_softmax_scale(c);
  at.q_lat = b.q_lat;
  at.o_lat = b.o_lat;
  at.out = b.attn;
  at.out_stride = out_dim;
  at.out_bf16 = b.attn_bf16;
  kc::latent_attention(at, s);

  kc::MatmulArgs o;
  o.x_bf16 = b.attn_bf16;
  o.x_stride = out_dim;
  o.n_tokens = n;
  o.cols = out_dim;
  o.problems[0] = {w.o, H, w.o_bias, b.h, H, true};
  kc::matmul(o, s);
}

std::string latent_attention_unsupported(const ModelConfig& c) {
  if (c.attention != AttentionKind::kLatent) return "";
  if (c.kv_lora_rank > kc::kMaxLatentRank) {
    return "multi-head latent attention (MLA) with kv_lora_rank " + std::to_string(c.kv_lora_rank) +
           " (the CUDA kernels take at most " + std::to_string(kc::kMaxLatentRank) + ")";
  }
  if (c.head_dim > kc::kMaxHeadDim) {
    return "multi-head latent attention (MLA) with qk_nope_head_dim + qk_rope_head_dim " +
           std::to_string(c.head_dim) + " (the CUDA kernels take at most " +
           std::to_string(kc::kMaxHeadDim) + ")";
  }
  return "";
}

}  // namespace dancemoe::backend::cuda
