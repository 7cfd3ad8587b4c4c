// The scalar reference of the MXFP4 format (cpu/mxfp4_block.h), one file
// (cpu/scalar/mxfp4.cpp) beside the other block formats': the quantizer,
// the dequantizer and the integer dot product. quantize.h's
// quantize_rows / dequantize_values and scalar::matmul_quant reach them
// through their per-format switches. Internal to kernels/.
#pragma once

#include <cstdint>

#include "kernels/quant_format.h"

namespace dancemoe::kernels {

// n_blocks blocks of 32 f32 values -> MXFP4 blocks.
void quantize_mxfp4(const float* x, int64_t n_blocks, uint8_t* dst);
// n_blocks MXFP4 blocks -> 32 f32 values each, exactly.
void dequantize_mxfp4(const uint8_t* src, int64_t n_blocks, float* y);

namespace scalar {
// One row of MXFP4 weights (cols / 32 blocks) against one quantized
// activation row (32-value groups): sum_b sum(level * q) * (2^(e-128) * dx).
float dot_mxfp4(const uint8_t* w, const QuantizedXRow& x, int64_t cols);
}  // namespace scalar

}  // namespace dancemoe::kernels
