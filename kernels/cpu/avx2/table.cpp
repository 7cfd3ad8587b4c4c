// The avx2 kernel table. Compiled WITHOUT the AVX2 flags
// (kernels/CMakeLists.txt): it only takes the ops' addresses, so whatever the
// compiler emits here is safe on any x86-64 CPU.
#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/simd_tables.h"
#include "kernels/quantize.h"

namespace dancemoe::kernels {

const CpuKernels* avx2_table() {
  static const CpuKernels kTable = [] {
    CpuKernels k;
    k.level = CpuLevel::kAvx2;
    k.matmul_f32 = avx2::matmul_f32;
    k.matmul_bf16 = avx2::matmul_bf16;
    k.matmul_quant = avx2::matmul_quant;
    k.quantize_x = avx2::quantize_x;
    // The AVX2 level keeps the integer kernels at every batch size
    // (matmul_quantized), so the reference dequantizer is enough.
    k.dequantize = dequantize_values;
    k.rmsnorm = avx2::rmsnorm;
    k.rope = avx2::rope;
    k.softmax = avx2::softmax;
    k.swiglu = avx2::swiglu;
    k.swiglu_clamped = avx2::swiglu_clamped;
    k.attention = avx2::attention;
    k.dot = avx2::dot;
    k.axpy = avx2::axpy;
    k.bf16_to_f32 = avx2::bf16_to_f32;
    k.f16_to_f32 = avx2::f16_to_f32;
    k.f32_to_bf16 = avx2::f32_to_bf16;
    return k;
  }();
  return &kTable;
}

StreamReadFn avx2_stream_read() { return avx2::stream_read; }

}  // namespace dancemoe::kernels
