// Vector primitives: dot(a, b) = sum_i a[i] b[i];  axpy: y[i] += a x[i].
#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::scalar {

float dot(const float* a, const float* b, int64_t n) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

void axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace dancemoe::kernels::scalar
