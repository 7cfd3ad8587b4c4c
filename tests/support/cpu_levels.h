// The kernel tables of the CPU levels this build and machine have, for
// tests that run a kernel at every level (kernels::cpu_kernels_for).
#pragma once

#include <vector>

#include "kernels/kernels.h"

namespace dancemoe::testing {

// The SIMD levels available here (AVX2 ... AVX-512 BF16), lowest first.
inline std::vector<const kernels::CpuKernels*> simd_cpu_kernels() {
  using kernels::CpuLevel;
  std::vector<const kernels::CpuKernels*> levels;
  for (CpuLevel level :
       {CpuLevel::kAvx2, CpuLevel::kAvx512, CpuLevel::kAvx512Vnni, CpuLevel::kAvx512Bf16}) {
    if (const kernels::CpuKernels* table = kernels::cpu_kernels_for(level)) levels.push_back(table);
  }
  return levels;
}

// The scalar reference, then the SIMD levels.
inline std::vector<const kernels::CpuKernels*> all_cpu_kernels() {
  std::vector<const kernels::CpuKernels*> levels = {
      kernels::cpu_kernels_for(kernels::CpuLevel::kScalar)};
  for (const kernels::CpuKernels* k : simd_cpu_kernels()) levels.push_back(k);
  return levels;
}

}  // namespace dancemoe::testing
