// Quantization and dequantization of weight matrices in the block formats
// (kernels.h, WeightType; layouts in cpu/quant_blocks.h and
// docs/quantization.md). Scalar reference code: used when a checkpoint is
// quantized (`dancemoe quantize`, a node's --expert-type) and where a few
// rows must be widened (embedding lookups, f32 compute), never per token on
// the matmul path.
//
//   src: [n_rows, cols] f32  <->  dst: n_rows rows of weight_row_bytes(type, cols)
//
// cols must be a multiple of weight_block_values(type) (checked by callers;
// a violation is a programmer error). Float types (f32, f16, bf16) convert
// element by element (round to nearest even). Thread-safe.
//
// Quantizers choose each block's scales by a small search that minimises the
// squared error weighted towards large values (the same objective as ggml's
// reference quantizers without an importance matrix); dequantization is
// exactly the format's definition.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace dancemoe::kernels {

void quantize_rows(WeightType type, const float* src, int64_t n_rows, int64_t cols, void* dst);

// `n_values` consecutive values (a multiple of the block) starting at a block boundary.
void dequantize_values(WeightType type, const void* src, int64_t n_values, float* dst);

}  // namespace dancemoe::kernels
