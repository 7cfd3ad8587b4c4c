// Dense projections y = x W^T on the device, up to three weight matrices
// sharing one input (q, k and v), in one launch:
//   x: [n_tokens, cols] bf16 (or f32, see below), row stride x_stride
//   W_i: [rows_i, cols] bf16 (HF Linear layout)
//   y_i[t, r] = (accumulate ? y_i[t, r] : 0) + sum_c x[t, c] W_i[r, c] (+ bias_i[r])
//   y_i: [n_tokens, y_stride_i] f32
// f32 accumulation. bf16 activations are the CPU's bf16 compute mode (the
// caller rounds them, e.g. rmsnorm's out_bf16); f32 activations are for the
// router, which the CPU always feeds f32 (GEMV only).
//
//   gemv: one warp per output row, 16-byte streaming weight loads, up to 4
//         tokens per pass (more tokens: more passes over L2-resident
//         weights). Memory bound: the batch-1 decode path.
//   gemm: tensor cores (mma.sync m16n8k16 bf16, mma_tile.cuh); needs bf16
//         activations, cols % 8 == 0 and 16-byte aligned rows.
//   matmul: gemm for batches of more than kGemvMaxTokens tokens when it can,
//           else gemv.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

constexpr int64_t kGemvMaxTokens = 8;
constexpr int kMaxMatmulProblems = 3;

struct MatmulProblem {
  const uint16_t* w = nullptr;  // [rows, cols] bf16
  int64_t rows = 0;
  const float* bias = nullptr;  // [rows] or null
  float* y = nullptr;
  int64_t y_stride = 0;
  bool accumulate = false;
};

struct MatmulArgs {
  const uint16_t* x_bf16 = nullptr;  // exactly one of x_bf16 / x_f32
  const float* x_f32 = nullptr;
  int64_t x_stride = 0;
  int64_t n_tokens = 0;
  int64_t cols = 0;
  MatmulProblem problems[kMaxMatmulProblems];
  int n_problems = 1;
};

void gemv(const MatmulArgs& args, Stream stream);
void gemm(const MatmulArgs& args, Stream stream);
void matmul(const MatmulArgs& args, Stream stream);

// Whether gemm() accepts these arguments.
bool gemm_supported(const MatmulArgs& args);

}  // namespace dancemoe::kernels::cuda
