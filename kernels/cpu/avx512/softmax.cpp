// x[i] = exp(x[i] - max(x)) / sum_j exp(x[j] - max(x)), in place.
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/avx512_util.h"

namespace dancemoe::kernels::avx512 {

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  // Not std::numeric_limits: an inline std:: function must not be emitted from
  // this AVX-512 TU (see avx512_util.h).
  const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
  __m512 max_v = neg_inf;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = low_mask16(n - i < 16 ? n - i : 16);
    max_v = _mm512_max_ps(max_v, _mm512_mask_loadu_ps(neg_inf, m, x + i));
  }
  const float sum = exp_shifted_sum(x, n, _mm512_reduce_max_ps(max_v));
  const __m512 inv_sum = _mm512_set1_ps(1.0f / sum);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = low_mask16(n - i < 16 ? n - i : 16);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv_sum));
  }
}

}  // namespace dancemoe::kernels::avx512
