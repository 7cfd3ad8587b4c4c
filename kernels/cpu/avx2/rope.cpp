// Rotary position embedding, rotate-half layout, in place.
//   x: [n_heads, head_dim]; cos, sin: [head_dim / 2]
//   x'[i]       = x[i] cos[i] - x[i + d/2] sin[i]
//   x'[i + d/2] = x[i + d/2] cos[i] + x[i] sin[i]
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"

namespace dancemoe::kernels::avx2 {

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* lo = x + h * head_dim;
    float* hi = lo + half;
    int64_t i = 0;
    for (; i + 8 <= half; i += 8) {
      const __m256 a = _mm256_loadu_ps(lo + i);
      const __m256 b = _mm256_loadu_ps(hi + i);
      const __m256 c = _mm256_loadu_ps(cos + i);
      const __m256 s = _mm256_loadu_ps(sin + i);
      _mm256_storeu_ps(lo + i, _mm256_fmsub_ps(a, c, _mm256_mul_ps(b, s)));
      _mm256_storeu_ps(hi + i, _mm256_fmadd_ps(b, c, _mm256_mul_ps(a, s)));
    }
    for (; i < half; ++i) {
      const float a = lo[i];
      const float b = hi[i];
      lo[i] = a * cos[i] - b * sin[i];
      hi[i] = b * cos[i] + a * sin[i];
    }
  }
}

}  // namespace dancemoe::kernels::avx2
