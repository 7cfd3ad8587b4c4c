// out = x / sqrt(mean(x^2) + eps) * weight      x, weight, out: [n]
#include <cmath>

#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::scalar {

void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  float sum_sq = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum_sq += x[i] * x[i];
  const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv_rms * weight[i];
}

}  // namespace dancemoe::kernels::scalar
