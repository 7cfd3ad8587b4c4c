// One query position against n_ctx cached positions, per query head h:
//   s[j]   = scale * q[h] . k[j, kvh]         kvh = h / (n_heads / n_kv_heads)
//   p      = softmax(s)     (over [s, sinks[h]] with attention sinks)
//   out[h] = sum_j p[j] v[j, kvh]
// q, out: [n_heads, head_dim]; k, v: [n_ctx, kv_stride]; scratch: [n_ctx]
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/avx2/avx2_util.h"
#include "kernels/cpu/numeric.h"
#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::avx2 {
namespace {

// 8 KV elements (f32 or bf16) as f32, and one.
inline __m256 load_kv(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load_kv(const uint16_t* p) { return load_bf16x8(p); }
inline float kv_value(float v) { return v; }
inline float kv_value(uint16_t v) { return bf16_to_float(v); }

// scores[j] = scale * q . k[j] for j in [0, n_ctx), four keys at a time so one
// q load serves four FMAs and four sums fold with one reduce4.
template <class E>
void scores(const float* q, const E* k, int64_t kv_stride, int64_t n_ctx, int64_t head_dim,
            float scale, float* out) {
  const int64_t d_vec = head_dim & ~int64_t{7};
  int64_t j = 0;
  for (; j + 4 <= n_ctx; j += 4) {
    const E* k0 = k + j * kv_stride;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t d = 0; d < d_vec; d += 8) {
      const __m256 qv = _mm256_loadu_ps(q + d);
      acc0 = _mm256_fmadd_ps(qv, load_kv(k0 + d), acc0);
      acc1 = _mm256_fmadd_ps(qv, load_kv(k0 + kv_stride + d), acc1);
      acc2 = _mm256_fmadd_ps(qv, load_kv(k0 + 2 * kv_stride + d), acc2);
      acc3 = _mm256_fmadd_ps(qv, load_kv(k0 + 3 * kv_stride + d), acc3);
    }
    float sums[4];
    _mm_storeu_ps(sums, reduce4(acc0, acc1, acc2, acc3));
    for (int64_t i = 0; i < 4; ++i) {
      const E* ki = k0 + i * kv_stride;
      for (int64_t d = d_vec; d < head_dim; ++d) sums[i] += q[d] * kv_value(ki[d]);
      out[j + i] = scale * sums[i];
    }
  }
  for (; j < n_ctx; ++j) {
    const E* kj = k + j * kv_stride;
    if constexpr (sizeof(E) == sizeof(float)) {
      out[j] = scale * dot(q, kj, head_dim);
    } else {
      __m256 acc = _mm256_setzero_ps();
      for (int64_t d = 0; d < d_vec; d += 8) {
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), load_kv(kj + d), acc);
      }
      float sum = reduce(acc);
      for (int64_t d = d_vec; d < head_dim; ++d) sum += q[d] * kv_value(kj[d]);
      out[j] = scale * sum;
    }
  }
}

// out[0, head_dim) = sum_j p[j] v[j], 32 output columns (4 registers) per
// pass over the keys; the last head_dim % 8 columns by a scalar loop.
template <class E>
void weighted_sum(const float* p, const E* v, int64_t kv_stride, int64_t n_ctx, int64_t head_dim,
                  float* out) {
  const int64_t d_vec = head_dim & ~int64_t{7};
  int64_t d = 0;
  for (; d + 32 <= d_vec; d += 32) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t j = 0; j < n_ctx; ++j) {
      const E* vj = v + j * kv_stride + d;
      const __m256 pj = _mm256_set1_ps(p[j]);
      acc0 = _mm256_fmadd_ps(pj, load_kv(vj), acc0);
      acc1 = _mm256_fmadd_ps(pj, load_kv(vj + 8), acc1);
      acc2 = _mm256_fmadd_ps(pj, load_kv(vj + 16), acc2);
      acc3 = _mm256_fmadd_ps(pj, load_kv(vj + 24), acc3);
    }
    _mm256_storeu_ps(out + d, acc0);
    _mm256_storeu_ps(out + d + 8, acc1);
    _mm256_storeu_ps(out + d + 16, acc2);
    _mm256_storeu_ps(out + d + 24, acc3);
  }
  for (; d < d_vec; d += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t j = 0; j < n_ctx; ++j) {
      acc = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), load_kv(v + j * kv_stride + d), acc);
    }
    _mm256_storeu_ps(out + d, acc);
  }
  for (; d < head_dim; ++d) {
    float acc = 0.0f;
    for (int64_t j = 0; j < n_ctx; ++j) acc += p[j] * kv_value(v[j * kv_stride + d]);
    out[d] = acc;
  }
}

template <class E>
void attention_impl(const AttentionArgs& a, const E* k, const E* v) {
  const int64_t group = a.n_heads / a.n_kv_heads;
  for (int64_t h = a.head_begin; h < a.head_end; ++h) {
    const int64_t kv_offset = (h / group) * a.head_dim;
    scores(a.q + h * a.head_dim, k + kv_offset, a.kv_stride, a.n_ctx, a.head_dim, a.scale,
           a.scratch);
    if (a.sinks == nullptr) {
      softmax(a.scratch, a.n_ctx);
    } else {  // rare (gpt-oss): the scalar softmax is a small share of the work
      scalar::softmax_with_sink(a.scratch, a.n_ctx, a.sinks[h]);
    }
    weighted_sum(a.scratch, v + kv_offset, a.kv_stride, a.n_ctx, a.head_dim,
                 a.out + h * a.head_dim);
  }
}

}  // namespace

void attention(const AttentionArgs& a) {
  if (a.k_bf16 != nullptr) {
    attention_impl(a, a.k_bf16, a.v_bf16);
  } else {
    attention_impl(a, a.k, a.v);
  }
}

}  // namespace dancemoe::kernels::avx2
