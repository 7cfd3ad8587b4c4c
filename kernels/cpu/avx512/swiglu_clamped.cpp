// out[i] = (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha g), g = min(gate, limit)
// (cpu/scalar/swiglu_clamped.cpp).
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/avx512_util.h"

namespace dancemoe::kernels::avx512 {

void swiglu_clamped(const float* gate, const float* up, int64_t n, float alpha, float limit,
                    float* out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 va = _mm512_set1_ps(alpha);
  const __m512 vl = _mm512_set1_ps(limit);
  const __m512 neg_l = _mm512_set1_ps(-limit);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = low_mask16(n - i < 16 ? n - i : 16);
    const __m512 g = _mm512_min_ps(_mm512_maskz_loadu_ps(m, gate + i), vl);
    const __m512 u = _mm512_max_ps(_mm512_min_ps(_mm512_maskz_loadu_ps(m, up + i), vl), neg_l);
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(va, g)));
    const __m512 glu = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_add_ps(u, one), glu));
  }
}

}  // namespace dancemoe::kernels::avx512
