// RMSNorm of rows:
//   out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight
//   x: [n_rows, width] with row stride x_stride; weight: [width] f32;
//   out: [n_rows, width] with row stride out_stride (may be x: in place);
//   out_bf16 (optional): the same values rounded to bf16, row stride
//   out_bf16_stride -- the input of the next bf16 matrix product.
// Per-head q/k norm (Qwen3) is this op over rows of head_dim: n_rows =
// n_tokens * n_heads, width = x_stride = head_dim.
// The sum of squares is accumulated in f32 (in a different order than the
// CPU's sequential loop: parity is to a tolerance, not bits).
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

struct RmsNormArgs {
  const float* x = nullptr;
  int64_t x_stride = 0;
  const float* weight = nullptr;
  int64_t n_rows = 0;
  int64_t width = 0;
  float eps = 1e-6f;
  float* out = nullptr;
  int64_t out_stride = 0;
  uint16_t* out_bf16 = nullptr;
  int64_t out_bf16_stride = 0;
};

void rmsnorm(const RmsNormArgs& args, Stream stream);

}  // namespace dancemoe::kernels::cuda
