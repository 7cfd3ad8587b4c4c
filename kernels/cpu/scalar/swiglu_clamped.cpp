// gpt-oss's clamped SwiGLU (its published GptOssExperts):
//   g = min(gate[i], limit),  u = clamp(up[i], -limit, limit)
//   out[i] = (u + 1) * g * sigmoid(alpha * g) = (u + 1) * g / (1 + exp(-alpha g))
#include <algorithm>
#include <cmath>

#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::scalar {

void swiglu_clamped(const float* gate, const float* up, int64_t n, float alpha, float limit,
                    float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], limit);
    const float u = std::clamp(up[i], -limit, limit);
    out[i] = (u + 1.0f) * (g / (1.0f + std::exp(-alpha * g)));
  }
}

}  // namespace dancemoe::kernels::scalar
