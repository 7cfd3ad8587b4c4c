// x[i] = exp(x[i] - max(x)) / sum_j exp(x[j] - max(x)), in place.
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/avx2/avx2_util.h"

namespace dancemoe::kernels::avx2 {

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const int64_t n_vec = n & ~int64_t{7};
  float max_value = x[0];
  if (n_vec > 0) {
    __m256 max_v = _mm256_loadu_ps(x);
    for (int64_t i = 8; i < n_vec; i += 8) max_v = _mm256_max_ps(max_v, _mm256_loadu_ps(x + i));
    float lanes[8];
    _mm256_storeu_ps(lanes, max_v);
    for (float lane : lanes) max_value = lane > max_value ? lane : max_value;
  }
  for (int64_t i = n_vec; i < n; ++i) max_value = x[i] > max_value ? x[i] : max_value;

  const __m256 max_b = _mm256_set1_ps(max_value);
  __m256 sum_v = _mm256_setzero_ps();
  for (int64_t i = 0; i < n_vec; i += 8) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), max_b));
    sum_v = _mm256_add_ps(sum_v, e);
    _mm256_storeu_ps(x + i, e);
  }
  float sum = reduce(sum_v);
  if (n_vec < n) {
    // The tail goes through the same exp via a padded stack vector; the pad is
    // -inf, whose exp is 0.
    float tail[8];
    for (int64_t i = 0; i < 8; ++i) tail[i] = n_vec + i < n ? x[n_vec + i] : -__builtin_inff();
    _mm256_storeu_ps(tail, exp_ps(_mm256_sub_ps(_mm256_loadu_ps(tail), max_b)));
    for (int64_t i = n_vec; i < n; ++i) {
      x[i] = tail[i - n_vec];
      sum += x[i];
    }
  }

  const float inv_sum = 1.0f / sum;
  const __m256 inv_sum_v = _mm256_set1_ps(inv_sum);
  for (int64_t i = 0; i < n_vec; i += 8) {
    _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv_sum_v));
  }
  for (int64_t i = n_vec; i < n; ++i) x[i] *= inv_sum;
}

}  // namespace dancemoe::kernels::avx2
