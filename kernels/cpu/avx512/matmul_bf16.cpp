// y[t, r] = sum_c x[t, c] W[r, c] with bf16 activations and bf16 weights,
// both widened to f32 in registers (this level has no bf16 dot product);
// f32 FMA accumulation. See matmul_tile.h for the blocking.
#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/matmul_tile.h"
#include "kernels/interleave.h"

namespace dancemoe::kernels::avx512 {

void matmul_bf16(const MatmulArgs& args, const uint16_t* x_bf16) {
  // An interleaved copy (kernels/interleave.h) has no kernel of its own here.
  if (args.w.layout == WeightLayout::kInterleaved16) {
    return matmul_deinterleaved<uint16_t>(args, x_bf16, matmul_bf16);
  }
  matmul_blocked<WideningKernel<BF16Source, BF16Source>>(args, x_bf16);
}

}  // namespace dancemoe::kernels::avx512
