// Entry points of the SIMD kernel tables. Each returns nullptr when this
// build does not include that level (DMOE_CPU_SIMD=OFF).
#pragma once

#include "kernels/kernels.h"

namespace dancemoe::kernels {

const CpuKernels* avx2_table();
const CpuKernels* avx512_table();
const CpuKernels* avx512bf16_table();

}  // namespace dancemoe::kernels
