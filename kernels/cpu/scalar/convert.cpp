// Element-wise conversions between f32 and bf16 / f16 (see numeric.h).
#include "kernels/cpu/numeric.h"
#include "kernels/cpu/scalar/scalar_ops.h"

namespace dancemoe::kernels::scalar {

void bf16_to_f32(const uint16_t* in, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(in[i]);
}

void f16_to_f32(const uint16_t* in, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = f16_to_float(in[i]);
}

void f32_to_bf16(const float* in, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = float_to_bf16(in[i]);
}

}  // namespace dancemoe::kernels::scalar
