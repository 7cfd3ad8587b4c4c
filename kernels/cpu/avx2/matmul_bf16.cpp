// y[t, r] = sum_c x[t, c] W[r, c] with bf16 activations and bf16 weights,
// both widened to f32 in registers; f32 FMA accumulation. See matmul_tile.h.
#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/avx2/matmul_tile.h"

namespace dancemoe::kernels::avx2 {

void matmul_bf16(const MatmulArgs& args, const uint16_t* x_bf16) {
  matmul_blocked<BF16Source, BF16Source>(args, x_bf16);
}

}  // namespace dancemoe::kernels::avx2
