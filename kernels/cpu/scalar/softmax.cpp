// x[i] = exp(x[i] - max(x)) / sum_j exp(x[j] - max(x)), in place.
#include <cmath>

#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::scalar {

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float max_value = x[0];
  for (int64_t i = 1; i < n; ++i) max_value = x[i] > max_value ? x[i] : max_value;
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max_value);
    sum += x[i];
  }
  const float inv_sum = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv_sum;
}

}  // namespace dancemoe::kernels::scalar
