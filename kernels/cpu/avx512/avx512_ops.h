// The AVX-512 (F/BW/VL/DQ) implementation of the ops in kernels.h, one op per
// file in this folder, plus the AVX-512 VNNI quantized matmul (*_vnni.cpp)
// and the AVX-512 BF16 matmul (*_bf16dp.cpp). Same
// signatures and contracts as the scalar reference (cpu/scalar/scalar_ops.h).
// These functions execute AVX-512 instructions: call them only through the
// table, which kernels.cpp hands out after checking the CPU.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace dancemoe::kernels::avx512 {

void matmul_f32(const MatmulArgs& args, const float* x);
void matmul_bf16(const MatmulArgs& args, const uint16_t* x_bf16);
void matmul_quant(const MatmulArgs& args, const void* x_q);
void quantize_x(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out);
void dequantize(WeightType type, const void* src, int64_t n_values, float* dst);
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
uint64_t stream_read(const void* data, int64_t n_bytes);

}  // namespace dancemoe::kernels::avx512

namespace dancemoe::kernels::avx512vnni {

// The quantized matmul with vpdpbusd (needs the avx512vnni level), and the
// activation quantizer compiled alongside it.
void matmul_quant(const MatmulArgs& args, const void* x_q);
void quantize_x(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out);
void dequantize(WeightType type, const void* src, int64_t n_values, float* dst);

}  // namespace dancemoe::kernels::avx512vnni

namespace dancemoe::kernels::avx512bf16 {

// matmul_bf16 with vdpbf16ps (needs the avx512bf16 level).
void matmul_bf16(const MatmulArgs& args, const uint16_t* x_bf16);

}  // namespace dancemoe::kernels::avx512bf16
