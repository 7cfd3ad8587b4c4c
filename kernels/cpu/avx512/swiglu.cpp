// out[i] = silu(gate[i]) * up[i],  silu(g) = g / (1 + exp(-g))
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/avx512_util.h"

namespace dancemoe::kernels::avx512 {

void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = low_mask16(n - i < 16 ? n - i : 16);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace dancemoe::kernels::avx512
