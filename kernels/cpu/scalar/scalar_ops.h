// The scalar reference implementation of every op in kernels.h, one op per
// file in this folder. Internal to kernels/.
#pragma once

#include "kernels/kernels.h"

namespace dancemoe::kernels::scalar {

void matmul_f32(const MatmulArgs& args, const float* x);
void matmul_bf16(const MatmulArgs& args, const uint16_t* x_bf16);
void matmul_quant(const MatmulArgs& args, const void* x_q);
void quantize_x(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out);
void rmsnorm(const float* x, const float* weight, int64_t n, float eps, float* out);
void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin);
void softmax(float* x, int64_t n);
void swiglu(const float* gate, const float* up, int64_t n, float* out);
void swiglu_clamped(const float* gate, const float* up, int64_t n, float alpha, float limit,
                    float* out);
void attention(const AttentionArgs& args);
float dot(const float* a, const float* b, int64_t n);
void axpy(float a, const float* x, float* y, int64_t n);
void bf16_to_f32(const uint16_t* in, int64_t n, float* out);
void f16_to_f32(const uint16_t* in, int64_t n, float* out);
void f32_to_bf16(const float* in, int64_t n, uint16_t* out);

// Not a kernel op: the read loop of the memory bandwidth benchmark (see
// simd_tables.h, StreamReadFn).
uint64_t stream_read(const void* data, int64_t n_bytes);

const CpuKernels& table();

}  // namespace dancemoe::kernels::scalar
