// Rotary position embedding, rotate-half layout, in place.
//   x: [n_heads, head_dim]; cos, sin: [head_dim / 2]
//   x'[i]       = x[i] cos[i] - x[i + d/2] sin[i]
//   x'[i + d/2] = x[i + d/2] cos[i] + x[i] sin[i]
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/avx512_util.h"

namespace dancemoe::kernels::avx512 {

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* lo = x + h * head_dim;
    float* hi = lo + half;
    for (int64_t i = 0; i < half; i += 16) {
      const __mmask16 m = low_mask16(half - i < 16 ? half - i : 16);
      const __m512 a = _mm512_maskz_loadu_ps(m, lo + i);
      const __m512 b = _mm512_maskz_loadu_ps(m, hi + i);
      const __m512 c = _mm512_maskz_loadu_ps(m, cos + i);
      const __m512 s = _mm512_maskz_loadu_ps(m, sin + i);
      _mm512_mask_storeu_ps(lo + i, m, _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s)));
      _mm512_mask_storeu_ps(hi + i, m, _mm512_fmadd_ps(b, c, _mm512_mul_ps(a, s)));
    }
  }
}

}  // namespace dancemoe::kernels::avx512
