// SwiGLU:  out[i] = silu(gate[i]) * up[i],  silu(g) = g / (1 + exp(-g))
//   gate, up, out: [n] f32; out_bf16 (optional) the same rounded to bf16.
// The expert FFN applies the same function in its gate/up epilogue
// (swiglu_value, device code), so this standalone op is what the parity
// test checks the formula with.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

void swiglu(const float* gate, const float* up, int64_t n, float* out, uint16_t* out_bf16,
            Stream stream);

#ifdef __CUDACC__
// Same expression as the CPU reference (kernels/cpu/scalar/swiglu.cpp).
__device__ __forceinline__ float swiglu_value(float g, float u) {
  return g / (1.0f + expf(-g)) * u;
}
// gpt-oss's clamped SwiGLU, the same expression as
// kernels/cpu/scalar/swiglu_clamped.cpp.
__device__ __forceinline__ float clamped_swiglu_value(float gate, float up, float alpha,
                                                      float limit) {
  const float g = fminf(gate, limit);
  const float u = fminf(fmaxf(up, -limit), limit);
  return (u + 1.0f) * (g / (1.0f + expf(-alpha * g)));
}
#endif

}  // namespace dancemoe::kernels::cuda
