// Until the SIMD levels are built (kernels/cpu/avx2, kernels/cpu/avx512), every
// level above scalar falls back to the scalar reference.
#include "kernels/cpu/simd_tables.h"

namespace dancemoe::kernels {

const CpuKernels* avx2_table() { return nullptr; }
const CpuKernels* avx512_table() { return nullptr; }
const CpuKernels* avx512bf16_table() { return nullptr; }

}  // namespace dancemoe::kernels
