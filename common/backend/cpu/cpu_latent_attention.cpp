// CpuForward's multi-head latent attention (MLA, DeepSeek-V2/V3), per layer:
//
//   q      = q_proj x                     or  q_b(rmsnorm(q_a x))     [H, nope + rope]
//   c, kpe = kv_a_proj_with_mqa x                                     [rank], [rope]
//   cache[pos] = [rmsnorm(c), rope(kpe)]  -- the compressed cache:    [rank + rope]
//   per head h, with W_UK[h] / W_UV[h] the nope / v rows of head h of kv_b:
//     score_j = scale * (q_nope[h] . W_UK[h] c_j + rope(q_pe[h]) . kpe_j)
//     out[h]  = W_UV[h] sum_j softmax(score)_j c_j
//   attn -> o_proj, added into the residual stream.
//
// Two ways to the same numbers:
// - absorbed (one token, decode): q_lat[h] = W_UK[h]^T q_nope[h], so the
//   score is one dot product with the cached row [c_j, kpe_j] -- the
//   attention kernel runs on the cache as it is (one key/value head of
//   width rank + rope, the values being the cached rows too, of which the
//   first rank columns are used), then out[h] = W_UV[h] o_lat[h]. Nothing
//   is decompressed: a step reads kv_b once, not once per cached position.
// - expanded (a batch of tokens, prefill): every visible position's keys
//   and values are decompressed with kv_b (k = [W_UK c_j, kpe_j], v = W_UV
//   c_j, padded to the key width) and the attention kernel runs per head.
// The row products with kv_b read its rows in the stored format, widened
// one row at a time. In a batch of several sequences the projections run
// over every row and each sequence attends on its own: absorbed when it
// brings one token, expanded otherwise.
#include <algorithm>
#include <cstring>

#include "common/backend/cpu/cpu_forward.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe::backend {
namespace {

// The RMSNorm epsilon of q_a_layernorm and kv_a_layernorm: DeepSeek's code
// builds them with the RMSNorm default, not rms_norm_eps.
constexpr float kLatentNormEps = 1e-6f;

// Row `row` of w widened to f32 into out[w.cols].
void widen_row(const kernels::CpuKernels& k, const kernels::WeightView& w, int64_t row,
               float* out) {
  const auto* bytes =
      static_cast<const uint8_t*>(w.data) + row * kernels::weight_row_bytes(w.type, w.cols);
  if (w.type == kernels::WeightType::kBF16) {
    k.bf16_to_f32(reinterpret_cast<const uint16_t*>(bytes), w.cols, out);
  } else {
    kernels::dequantize_values(w.type, bytes, w.cols, out);
  }
}

}  // namespace

Status CpuForward::latent_attention(int64_t layer) {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const ModelConfig& c = config_;
  const LayerWeights& lw = weights_.layer(layer);
  const AttentionWeights& aw = lw.attention;
  const int64_t n = n_;
  const int64_t n_heads = c.n_heads;
  const int64_t nope = c.qk_nope_head_dim;
  const int64_t rope = c.rope_dim();
  const int64_t head_dim = c.head_dim;  // nope + rope
  const int64_t rank = c.kv_lora_rank;
  const int64_t row = rank + rope;  // one cached position

  // q and the compressed key/value of the batch.
  norm_rows(lw.input_norm);
  xn_.prepare(k, n, {aw.kv_a.type, c.q_lora_rank > 0 ? aw.q_a.type : aw.q.type});
  grow(&kv_a_, n * row);
  project(aw.kv_a, xn_.view(), kv_a_.data(), row, WeightPath::kExactWeights);  // the latent cache
  if (c.q_lora_rank > 0) {
    latent_q_.resize(n, c.q_lora_rank, precision_);
    project(aw.q_a, xn_.view(), latent_q_.f32(), c.q_lora_rank);
    for (int64_t t = 0; t < n; ++t) {
      k.rmsnorm(latent_q_.row(t), aw.q_a_norm, c.q_lora_rank, kLatentNormEps, latent_q_.row(t));
    }
    latent_q_.prepare(k, n, {aw.q_b.type});
    project(aw.q_b, latent_q_.view(), q_.data(), c.q_dim());
  } else {
    project(aw.q, xn_.view(), q_.data(), c.q_dim());
  }
  for (int64_t t = 0; t < n; ++t) {
    float* q = q_.data() + t * c.q_dim();
    float* kv = kv_a_.data() + t * row;
    rotate(q + nope, n_heads, head_dim, t);  // each head's rope part
    rotate(kv + rank, 1, rope, t);
    const Segment& s = segments_[static_cast<size_t>(row_segment_[static_cast<size_t>(t)])];
    float* dst = s.cache->keys(layer) + (s.pos0 + t - s.first_row) * row;
    k.rmsnorm(kv, aw.kv_a_norm, rank, kLatentNormEps, dst);
    std::memcpy(dst + rank, kv + rank, static_cast<size_t>(rope) * sizeof(float));
  }

  for (const Segment& s : segments_) {
    if (s.n_rows == 1) {
      latent_absorbed(layer, s);
    } else {
      latent_expanded(layer, s);
    }
  }
  attn_.prepare(k, n, {aw.o.type});
  project_out(layer);
  return Status::ok();
}

// One token of a sequence: absorbed.
void CpuForward::latent_absorbed(int64_t layer, const Segment& s) {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const ModelConfig& c = config_;
  const AttentionWeights& aw = weights_.layer(layer).attention;
  const int64_t n_heads = c.n_heads;
  const int64_t nope = c.qk_nope_head_dim;
  const int64_t rope = c.rope_dim();
  const int64_t head_dim = c.head_dim;  // nope + rope
  const int64_t v_dim = c.v_head_dim;
  const int64_t rank = c.kv_lora_rank;
  const int64_t row = rank + rope;  // one cached position
  const int64_t t0 = s.first_row;
  const float* cached = s.cache->keys(layer);
  const int64_t n_ctx = s.pos0 + 1;
  const int n_threads = pool_.size();
  const int64_t kv_b_head = nope + v_dim;  // kv_b rows per head
  // Per head, q_lat = W_UK^T q_nope; attention over the cached rows;
  // out = W_UV o_lat.
  grow(&q_absorbed_, n_heads * row);
  grow(&o_latent_, n_heads * row);
  grow(&row_scratch_, static_cast<int64_t>(n_threads) * rank);
  const float* q = q_.data() + t0 * c.q_dim();
  pool_.parallel_for(n_heads, [&](int64_t h, int thread_idx) {
    float* widened = row_scratch_.data() + thread_idx * rank;
    float* q_lat = q_absorbed_.data() + h * row;
    std::fill(q_lat, q_lat + rank, 0.0f);
    const float* q_nope = q + h * head_dim;
    for (int64_t d = 0; d < nope; ++d) {
      widen_row(k, aw.kv_b, h * kv_b_head + d, widened);
      k.axpy(q_nope[d], widened, q_lat, rank);
    }
    std::memcpy(q_lat + rank, q_nope + nope, static_cast<size_t>(rope) * sizeof(float));
    kernels::AttentionArgs args;
    args.q = q_lat;
    args.k = cached;
    args.v = cached;
    args.kv_stride = row;
    args.n_ctx = n_ctx;
    args.n_heads = 1;
    args.n_kv_heads = 1;
    args.head_dim = row;
    args.scale = softmax_scale_;
    args.out = o_latent_.data() + h * row;
    args.scratch = attention_scratch_[static_cast<size_t>(thread_idx)].data();
    args.head_begin = 0;
    args.head_end = 1;
    k.attention(args);
    float* out = attn_.row(t0) + h * v_dim;
    for (int64_t v = 0; v < v_dim; ++v) {
      widen_row(k, aw.kv_b, h * kv_b_head + nope + v, widened);
      out[v] = k.dot(widened, o_latent_.data() + h * row, rank);
    }
  });
}

// Several tokens of a sequence: expanded.
void CpuForward::latent_expanded(int64_t layer, const Segment& s) {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const ModelConfig& c = config_;
  const AttentionWeights& aw = weights_.layer(layer).attention;
  const int64_t n_heads = c.n_heads;
  const int64_t nope = c.qk_nope_head_dim;
  const int64_t rope = c.rope_dim();
  const int64_t head_dim = c.head_dim;  // nope + rope
  const int64_t v_dim = c.v_head_dim;
  const int64_t rank = c.kv_lora_rank;
  const int64_t row = rank + rope;  // one cached position
  const int64_t t0 = s.first_row;
  const int64_t n = s.n_rows;
  const int64_t pos0 = s.pos0;
  const float* cached = s.cache->keys(layer);
  const int64_t n_ctx = pos0 + n;
  const int n_threads = pool_.size();
  const int64_t kv_b_head = nope + v_dim;  // kv_b rows per head
  // Decompress every visible position, then attend per head.
  latent_kv_.resize(n_ctx, rank, precision_);
  for (int64_t j = 0; j < n_ctx; ++j) {
    std::memcpy(latent_kv_.row(j), cached + j * row, static_cast<size_t>(rank) * sizeof(float));
  }
  latent_kv_.prepare(k, n_ctx, {aw.kv_b.type});
  const int64_t kv_width = n_heads * kv_b_head;
  grow(&kv_expanded_, n_ctx * kv_width);
  {
    const ActivationsView x = latent_kv_.view();
    const int64_t n_chunks = chunk_count(kv_width, 16, n_threads);
    pool_.parallel_for(n_chunks, [&](int64_t chunk, int) {
      const Range r = split_range(kv_width, chunk, n_chunks, 16);
      matmul_rows(k, aw.kv_b, x, n_ctx, kv_expanded_.data(), kv_width, r.begin, r.end);
    });
  }
  // keys [n_ctx, H * head_dim]: [k_nope, kpe] per head; values [n_ctx,
  // H * head_dim]: v, zero-padded to head_dim (the kernel's one width).
  grow(&k_, n_ctx * n_heads * head_dim);
  grow(&v_, n_ctx * n_heads * head_dim);
  const int64_t width = n_heads * head_dim;
  for (int64_t j = 0; j < n_ctx; ++j) {
    const float* kv = kv_expanded_.data() + j * kv_width;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* key = k_.data() + j * width + h * head_dim;
      float* value = v_.data() + j * width + h * head_dim;
      std::memcpy(key, kv + h * kv_b_head, static_cast<size_t>(nope) * sizeof(float));
      std::memcpy(key + nope, cached + j * row + rank, static_cast<size_t>(rope) * sizeof(float));
      std::memcpy(value, kv + h * kv_b_head + nope, static_cast<size_t>(v_dim) * sizeof(float));
      std::fill(value + v_dim, value + head_dim, 0.0f);
    }
  }
  grow(&o_latent_, n * n_heads * head_dim);
  pool_.parallel_for(n * n_heads, [&](int64_t item, int thread_idx) {
    const int64_t t = item / n_heads;
    const int64_t h = item % n_heads;
    kernels::AttentionArgs args;
    args.q = q_.data() + (t0 + t) * c.q_dim();
    args.k = k_.data();
    args.v = v_.data();
    args.kv_stride = width;
    args.n_ctx = pos0 + t + 1;
    args.n_heads = n_heads;
    args.n_kv_heads = n_heads;
    args.head_dim = head_dim;
    args.scale = softmax_scale_;
    args.out = o_latent_.data() + t * width;
    args.scratch = attention_scratch_[static_cast<size_t>(thread_idx)].data();
    args.head_begin = h;
    args.head_end = h + 1;
    k.attention(args);
    std::memcpy(attn_.row(t0 + t) + h * v_dim, o_latent_.data() + t * width + h * head_dim,
                static_cast<size_t>(v_dim) * sizeof(float));
  });
}

}  // namespace dancemoe::backend
