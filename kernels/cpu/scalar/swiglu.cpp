// out[i] = silu(gate[i]) * up[i],  silu(g) = g / (1 + exp(-g))
#include <cmath>

#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::scalar {

void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace dancemoe::kernels::scalar
