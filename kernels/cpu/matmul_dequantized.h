// The f32-activation matmul for block-format weights, shared by every level's
// matmul_f32: each row of W is dequantized exactly (kernels/quantize.h) into a
// per-thread buffer and dotted with x by the level's own dot. The reference
// path of f32 compute; quantized inference uses matmul_quant.
//
// Compiled for baseline x86-64 (this folder, not cpu/avx*): SIMD levels may
// call it, it calls back into them only through `dot`.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace dancemoe::kernels {

using DotFn = float (*)(const float* a, const float* b, int64_t n);

void matmul_dequantized(const MatmulArgs& args, const float* x, DotFn dot);

}  // namespace dancemoe::kernels
