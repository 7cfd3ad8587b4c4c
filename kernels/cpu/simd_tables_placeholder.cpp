// Compiled instead of cpu/avx2 and cpu/avx512 when the SIMD levels are left
// out of the build (DMOE_CPU_SIMD=OFF or a non-x86 target): every level above
// scalar then falls back to the scalar reference.
#include "kernels/cpu/simd_tables.h"

namespace dancemoe::kernels {

const CpuKernels* avx2_table() { return nullptr; }
const CpuKernels* avx512_table() { return nullptr; }
const CpuKernels* avx512vnni_table() { return nullptr; }
const CpuKernels* avx512bf16_table() { return nullptr; }
StreamReadFn avx2_stream_read() { return nullptr; }
StreamReadFn avx512_stream_read() { return nullptr; }

}  // namespace dancemoe::kernels
