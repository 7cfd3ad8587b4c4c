// out = x / sqrt(mean(x^2) + eps) * weight      x, weight, out: [n]
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/avx2/avx2_util.h"

namespace dancemoe::kernels::avx2 {

void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i);
    const __m256 b = _mm256_loadu_ps(x + i + 8);
    acc0 = _mm256_fmadd_ps(a, a, acc0);
    acc1 = _mm256_fmadd_ps(b, b, acc1);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_loadu_ps(x + i);
    acc0 = _mm256_fmadd_ps(a, a, acc0);
  }
  float sum_sq = reduce(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum_sq += x[i] * x[i];
  const float mean = sum_sq / static_cast<float>(n) + eps;
  const float inv_rms = 1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(mean)));
  const __m256 inv_rms_v = _mm256_set1_ps(inv_rms);
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 scaled = _mm256_mul_ps(_mm256_loadu_ps(x + i), inv_rms_v);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(scaled, _mm256_loadu_ps(weight + i)));
  }
  for (; i < n; ++i) out[i] = x[i] * inv_rms * weight[i];
}

}  // namespace dancemoe::kernels::avx2
