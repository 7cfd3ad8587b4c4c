#include "kernels/cpu/scalar/scalar_ops.h"
#include "kernels/quantize.h"

namespace dancemoe::kernels::scalar {

const CpuKernels& table() {
  static const CpuKernels kTable = [] {
    CpuKernels k;
    k.level = CpuLevel::kScalar;
    k.matmul_f32 = matmul_f32;
    k.matmul_bf16 = matmul_bf16;
    k.matmul_quant = matmul_quant;
    k.quantize_x = quantize_x;
    k.dequantize = dequantize_values;
    k.rmsnorm = rmsnorm;
    k.rope = rope;
    k.softmax = softmax;
    k.swiglu = swiglu;
    k.swiglu_clamped = swiglu_clamped;
    k.attention = attention;
    k.dot = dot;
    k.axpy = axpy;
    k.bf16_to_f32 = bf16_to_f32;
    k.f16_to_f32 = f16_to_f32;
    k.f32_to_bf16 = f32_to_bf16;
    return k;
  }();
  return kTable;
}

}  // namespace dancemoe::kernels::scalar
