// Rotary position embedding, rotate-half layout (as kernels.h), in place:
//   x: [n_tokens, row_stride] f32, head h of token t at columns
//      [h * head_dim, (h + 1) * head_dim); token t is at position pos0 + t
//   x'[i]       = x[i] cos[i] - x[i + d/2] sin[i]
//   x'[i + d/2] = x[i + d/2] cos[i] + x[i] sin[i]
// rope_tables makes cos/sin: [n_tokens, head_dim / 2] f32 from the angle
// (pos0 + t) * inv_freq[i], computed in double and rounded once, as the CPU
// forward does (common/backend/cpu/cpu_forward.cpp).
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

void rope_tables(const double* inv_freq, int64_t half, const int32_t* d_pos0, int64_t n_tokens,
                 float* cos, float* sin, Stream stream);

void rope(float* x, int64_t n_tokens, int64_t row_stride, int64_t n_heads, int64_t head_dim,
          const float* cos, const float* sin, Stream stream);

}  // namespace dancemoe::kernels::cuda
