// One query position against n_ctx cached positions, per query head h:
//   s[j]   = scale * q[h] . k[j, kvh]         kvh = h / (n_heads / n_kv_heads)
//   p      = softmax(s)
//   out[h] = sum_j p[j] v[j, kvh]
// q, out: [n_heads, head_dim]; k, v: [n_ctx, kv_stride]; scratch: [n_ctx]
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/avx512_util.h"

namespace dancemoe::kernels::avx512 {
namespace {

// scores[j] = scale * q . k[j] for j in [0, n_ctx), four keys at a time so one
// q load serves four FMAs and four sums fold with one reduce4.
void scores(const float* q, const float* k, int64_t kv_stride, int64_t n_ctx, int64_t head_dim,
            float scale, float* out) {
  const __m128 scale4 = _mm_set1_ps(scale);
  int64_t j = 0;
  for (; j + 4 <= n_ctx; j += 4) {
    const float* k0 = k + j * kv_stride;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t d = 0; d < head_dim; d += 16) {
      const __mmask16 m = low_mask16(head_dim - d < 16 ? head_dim - d : 16);
      const __m512 qv = _mm512_maskz_loadu_ps(m, q + d);
      acc0 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k0 + d), acc0);
      acc1 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k0 + kv_stride + d), acc1);
      acc2 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k0 + 2 * kv_stride + d), acc2);
      acc3 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(m, k0 + 3 * kv_stride + d), acc3);
    }
    _mm_storeu_ps(out + j, _mm_mul_ps(scale4, reduce4(acc0, acc1, acc2, acc3)));
  }
  for (; j < n_ctx; ++j) out[j] = scale * dot(q, k + j * kv_stride, head_dim);
}

// out[0, head_dim) = sum_j p[j] v[j], 64 output columns (4 registers) per
// pass over the keys.
void weighted_sum(const float* p, const float* v, int64_t kv_stride, int64_t n_ctx,
                  int64_t head_dim, float* out) {
  for (int64_t d = 0; d < head_dim; d += 64) {
    const int64_t width = head_dim - d < 64 ? head_dim - d : 64;
    const __mmask16 m0 = low_mask16(width < 16 ? width : 16);
    const __mmask16 m1 = low_mask16(width < 16 ? 0 : (width < 32 ? width - 16 : 16));
    const __mmask16 m2 = low_mask16(width < 32 ? 0 : (width < 48 ? width - 32 : 16));
    const __mmask16 m3 = low_mask16(width < 48 ? 0 : width - 48);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (int64_t j = 0; j < n_ctx; ++j) {
      const float* vj = v + j * kv_stride + d;
      const __m512 pj = _mm512_set1_ps(p[j]);
      acc0 = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m0, vj), acc0);
      acc1 = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m1, vj + 16), acc1);
      acc2 = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m2, vj + 32), acc2);
      acc3 = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m3, vj + 48), acc3);
    }
    _mm512_mask_storeu_ps(out + d, m0, acc0);
    _mm512_mask_storeu_ps(out + d + 16, m1, acc1);
    _mm512_mask_storeu_ps(out + d + 32, m2, acc2);
    _mm512_mask_storeu_ps(out + d + 48, m3, acc3);
  }
}

}  // namespace

void attention(const AttentionArgs& a) {
  const int64_t group = a.n_heads / a.n_kv_heads;
  for (int64_t h = a.head_begin; h < a.head_end; ++h) {
    const int64_t kv_offset = (h / group) * a.head_dim;
    scores(a.q + h * a.head_dim, a.k + kv_offset, a.kv_stride, a.n_ctx, a.head_dim, a.scale,
           a.scratch);
    softmax(a.scratch, a.n_ctx);
    weighted_sum(a.scratch, a.v + kv_offset, a.kv_stride, a.n_ctx, a.head_dim,
                 a.out + h * a.head_dim);
  }
}

}  // namespace dancemoe::kernels::avx512
