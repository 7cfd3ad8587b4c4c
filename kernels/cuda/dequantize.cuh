// Block-format weights -> bf16 on the device, for the tensor-core GEMM of
// quantized matrices at prefill (matmul_quant.cuh) and for tests:
//   w: [rows] rows of weight_row_bytes(type, cols) bytes (GGUF blocks)
//   out[r * out_stride + c] = bf16(value (r, c))   (round to nearest even)
// Values are dequantized exactly as kernels/quantize.h does, then rounded.
// Q8_0, Q4_0, Q4_K, Q5_K, Q6_K and MXFP4; any other type launches nothing
// and returns false, for the caller to report.
#pragma once

#include "kernels/cuda/cuda_types.h"
#include "kernels/kernels.h"

namespace dancemoe::kernels::cuda {

[[nodiscard]] bool dequantize_bf16(WeightType type, const void* w, int64_t rows, int64_t cols,
                                   uint16_t* out, int64_t out_stride, Stream stream);

}  // namespace dancemoe::kernels::cuda
