// out = x / sqrt(mean(x^2) + eps) * weight      x, weight, out: [n]
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/avx512_util.h"

namespace dancemoe::kernels::avx512 {

void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  __m512 acc0 = _mm512_setzero_ps();
  __m512 acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i);
    const __m512 b = _mm512_loadu_ps(x + i + 16);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
    acc1 = _mm512_fmadd_ps(b, b, acc1);
  }
  for (; i < n; i += 16) {
    const __m512 a = _mm512_maskz_loadu_ps(low_mask16(n - i < 16 ? n - i : 16), x + i);
    acc0 = _mm512_fmadd_ps(a, a, acc0);
  }
  const float sum_sq = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  const float mean = sum_sq / static_cast<float>(n) + eps;
  const __m512 inv_rms = _mm512_set1_ps(1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(mean))));
  for (i = 0; i + 16 <= n; i += 16) {
    const __m512 scaled = _mm512_mul_ps(_mm512_loadu_ps(x + i), inv_rms);
    _mm512_storeu_ps(out + i, _mm512_mul_ps(scaled, _mm512_loadu_ps(weight + i)));
  }
  if (i < n) {
    const __mmask16 m = low_mask16(n - i);
    const __m512 scaled = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv_rms);
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(scaled, _mm512_maskz_loadu_ps(m, weight + i)));
  }
}

}  // namespace dancemoe::kernels::avx512
