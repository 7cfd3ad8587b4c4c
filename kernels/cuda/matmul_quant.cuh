// y = x W^T on the device for a block-format W (GGUF Q8_0, Q4_0, Q4_K,
// Q5_K, Q6_K, MXFP4), dequantized on the fly:
//   W: [rows] rows of weight_row_bytes(type, cols) bytes
//   x: [n_tokens, cols] f32 or bf16 (exactly one), row stride x_stride
//   y[t, r] = (accumulate ? y[t, r] : 0) + sum_c x[t, c] W[r, c];  y: [n_tokens, y_stride] f32
// f32 accumulation; each weight dequantized exactly as on the CPU
// (quant_blocks.cuh), so results match the CPU's matmul_f32 on the same
// weights up to summation order.
//
//   gemv_quant: one warp per output row; each lane dequantizes groups of
//               32 values (lanes take consecutive groups, so a warp reads a
//               contiguous span of the row) and dots them with up to 4
//               tokens per pass. The decode path.
//   matmul_quant: for more than kGemvMaxTokens tokens with bf16 activations
//               and a scratch of rows * cols bf16, dequantizes W into the
//               scratch and runs the tensor-core GEMM (matmul.cuh); else
//               gemv_quant.
#pragma once

#include "kernels/cuda/cuda_types.h"
#include "kernels/kernels.h"

namespace dancemoe::kernels::cuda {

struct QuantMatmulArgs {
  const void* w = nullptr;
  WeightType type = WeightType::kQ8_0;
  int64_t rows = 0;
  int64_t cols = 0;  // a multiple of the type's block
  const float* x_f32 = nullptr;
  const uint16_t* x_bf16 = nullptr;
  int64_t x_stride = 0;
  int64_t n_tokens = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
  bool accumulate = false;
};

// Both return false, launching nothing, for a type they do not read (the
// caller reports it: a silently skipped projection is a wrong answer).
[[nodiscard]] bool gemv_quant(const QuantMatmulArgs& args, Stream stream);
// scratch_bf16: rows * cols elements, or null (then always gemv_quant).
[[nodiscard]] bool matmul_quant(const QuantMatmulArgs& args, uint16_t* scratch_bf16, Stream stream);

}  // namespace dancemoe::kernels::cuda
