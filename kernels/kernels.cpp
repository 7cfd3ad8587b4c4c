// Run-time selection of the kernel table. Each SIMD level lives in its own
// folder compiled with that level's ISA flags; this file is compiled without
// them, so nothing here may execute a wider instruction than the CPU has.
#include "kernels/kernels.h"

#include "kernels/cpu/scalar/scalar_ops.h"
#include "kernels/cpu/simd_tables.h"

namespace dancemoe::kernels {

const CpuKernels* cpu_kernels_for(CpuLevel level) {
  if (level > detect_cpu_level()) return nullptr;
  switch (level) {
    case CpuLevel::kScalar:
      return &scalar::table();
    case CpuLevel::kAvx2:
      return avx2_table();
    case CpuLevel::kAvx512:
      return avx512_table();
    case CpuLevel::kAvx512Vnni:
      return avx512vnni_table();
    case CpuLevel::kAvx512Bf16:
      return avx512bf16_table();
  }
  return nullptr;
}

const CpuKernels& cpu_kernels() {
  // Fall back level by level in case a build left one out.
  for (int level = static_cast<int>(active_cpu_level()); level > 0; --level) {
    if (const CpuKernels* table = cpu_kernels_for(static_cast<CpuLevel>(level))) return *table;
  }
  return scalar::table();
}

}  // namespace dancemoe::kernels
