// Small element-wise ops the device forward needs between the big ones:
//   axpy:        y[i] += a * x[i]                        x, y: [n] f32
//   f32_to_bf16: out[i] = bf16(in[i]), round to nearest even (bit-exact with
//                the CPU's f32_to_bf16)
//   bf16_to_f32: out[i] = f32(in[i])  (exact)
//   sigmoid:     x[i] = 1 / (1 + exp(-x[i]))  in place  x: [n] f32
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

void axpy(float a, const float* x, float* y, int64_t n, Stream stream);
void f32_to_bf16(const float* in, int64_t n, uint16_t* out, Stream stream);
void bf16_to_f32(const uint16_t* in, int64_t n, float* out, Stream stream);
void sigmoid(float* x, int64_t n, Stream stream);

}  // namespace dancemoe::kernels::cuda
