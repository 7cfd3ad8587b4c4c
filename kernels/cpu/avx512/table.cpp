// The avx512, avx512vnni and avx512bf16 kernel tables. Compiled WITHOUT the AVX-512 flags
// (kernels/CMakeLists.txt): it only takes the ops' addresses, so whatever the
// compiler emits here is safe on any x86-64 CPU.
#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/simd_tables.h"

namespace dancemoe::kernels {
namespace {

CpuKernels make_avx512_table() {
  CpuKernels k;
  k.level = CpuLevel::kAvx512;
  k.matmul_f32 = avx512::matmul_f32;
  k.matmul_bf16 = avx512::matmul_bf16;
  k.matmul_quant = avx512::matmul_quant;
  k.quantize_x = avx512::quantize_x;
  k.dequantize = avx512::dequantize;
  k.rmsnorm = avx512::rmsnorm;
  k.rope = avx512::rope;
  k.softmax = avx512::softmax;
  k.swiglu = avx512::swiglu;
  k.swiglu_clamped = avx512::swiglu_clamped;
  k.attention = avx512::attention;
  k.dot = avx512::dot;
  k.axpy = avx512::axpy;
  k.bf16_to_f32 = avx512::bf16_to_f32;
  k.f16_to_f32 = avx512::f16_to_f32;
  k.f32_to_bf16 = avx512::f32_to_bf16;
  return k;
}

CpuKernels make_avx512vnni_table() {
  CpuKernels k = make_avx512_table();
  k.level = CpuLevel::kAvx512Vnni;
  k.matmul_quant = avx512vnni::matmul_quant;
  k.interleaved_k = true;
  k.quantize_x = avx512vnni::quantize_x;
  k.dequantize = avx512vnni::dequantize;
  return k;
}

}  // namespace

const CpuKernels* avx512_table() {
  static const CpuKernels kTable = make_avx512_table();
  return &kTable;
}

const CpuKernels* avx512vnni_table() {
  static const CpuKernels kTable = make_avx512vnni_table();
  return &kTable;
}

const CpuKernels* avx512bf16_table() {
  static const CpuKernels kTable = [] {
    CpuKernels k = make_avx512vnni_table();
    k.level = CpuLevel::kAvx512Bf16;
    // The only op that gains from the BF16 instructions; matmul_f32 keeps f32
    // activations and so cannot round them to bf16.
    k.matmul_bf16 = avx512bf16::matmul_bf16;
    k.interleaved_bf16 = true;
    return k;
  }();
  return &kTable;
}

StreamReadFn avx512_stream_read() { return avx512::stream_read; }

}  // namespace dancemoe::kernels
