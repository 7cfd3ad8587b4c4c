// out[i] = silu(gate[i]) * up[i],  silu(g) = g / (1 + exp(-g))
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/avx2/avx2_util.h"

namespace dancemoe::kernels::avx2 {
namespace {

inline __m256 swiglu8(__m256 g, __m256 u) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

}  // namespace

void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, swiglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    // The tail goes through the same exp via padded stack vectors.
    float g[8] = {};
    float u[8] = {};
    for (int64_t j = i; j < n; ++j) {
      g[j - i] = gate[j];
      u[j - i] = up[j];
    }
    float o[8];
    _mm256_storeu_ps(o, swiglu8(_mm256_loadu_ps(g), _mm256_loadu_ps(u)));
    for (int64_t j = i; j < n; ++j) out[j] = o[j - i];
  }
}

}  // namespace dancemoe::kernels::avx2
