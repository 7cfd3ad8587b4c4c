// y[t, r] = sum_c x[t, c] W[r, c] with f32 activations and f32 / f16 / bf16
// weights widened to f32 in registers; f32 FMA accumulation. Block formats
// take the dequantizing path (matmul_dequantized.h). See
// matmul_tile.h for the blocking.
#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/matmul_tile.h"
#include "kernels/cpu/matmul_dequantized.h"
#include "kernels/interleave.h"

namespace dancemoe::kernels::avx512 {

void matmul_f32(const MatmulArgs& args, const float* x) {
  if (args.w.type == WeightType::kBF16 && args.w.layout == WeightLayout::kInterleaved16) {
    return matmul_deinterleaved<float>(args, x, matmul_f32);  // kernels/interleave.h
  }
  switch (args.w.type) {
    case WeightType::kBF16:
      matmul_blocked<WideningKernel<BF16Source, F32Source>>(args, x);
      return;
    case WeightType::kF16:
      matmul_blocked<WideningKernel<F16Source, F32Source>>(args, x);
      return;
    case WeightType::kF32:
      matmul_blocked<WideningKernel<F32Source, F32Source>>(args, x);
      return;
    default:  // block formats
      matmul_dequantized(args, x, avx512::dot);
      return;
  }
}

}  // namespace dancemoe::kernels::avx512
