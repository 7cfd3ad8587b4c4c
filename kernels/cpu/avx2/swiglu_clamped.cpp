// out[i] = (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha g), g = min(gate, limit)
// (cpu/scalar/swiglu_clamped.cpp).
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/avx2/avx2_util.h"

namespace dancemoe::kernels::avx2 {
namespace {

inline __m256 clamped8(__m256 gate, __m256 up, __m256 alpha, __m256 limit) {
  const __m256 g = _mm256_min_ps(gate, limit);
  const __m256 u =
      _mm256_max_ps(_mm256_min_ps(up, limit), _mm256_sub_ps(_mm256_setzero_ps(), limit));
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(alpha, g)));
  const __m256 glu = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_mul_ps(_mm256_add_ps(u, _mm256_set1_ps(1.0f)), glu);
}

}  // namespace

void swiglu_clamped(const float* gate, const float* up, int64_t n, float alpha, float limit,
                    float* out) {
  const __m256 va = _mm256_set1_ps(alpha);
  const __m256 vl = _mm256_set1_ps(limit);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, clamped8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i), va, vl));
  }
  if (i < n) {  // the tail through the same math, padded
    float g[8] = {};
    float u[8] = {};
    for (int64_t j = i; j < n; ++j) {
      g[j - i] = gate[j];
      u[j - i] = up[j];
    }
    float o[8];
    _mm256_storeu_ps(o, clamped8(_mm256_loadu_ps(g), _mm256_loadu_ps(u), va, vl));
    for (int64_t j = i; j < n; ++j) out[j] = o[j - i];
  }
}

}  // namespace dancemoe::kernels::avx2
