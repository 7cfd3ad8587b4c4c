// Rotary position embedding, rotate-half layout, in place.
//   x: [n_heads, head_dim]; cos, sin: [head_dim / 2]
//   x'[i]       = x[i] cos[i] - x[i + d/2] sin[i]
//   x'[i + d/2] = x[i + d/2] cos[i] + x[i] sin[i]
#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::scalar {

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* xh = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float a = xh[i];
      const float b = xh[i + half];
      xh[i] = a * cos[i] - b * sin[i];
      xh[i + half] = b * cos[i] + a * sin[i];
    }
  }
}

}  // namespace dancemoe::kernels::scalar
