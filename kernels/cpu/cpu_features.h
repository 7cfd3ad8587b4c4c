// CPU feature detection and the instruction-set level the CPU kernels use.
//
// The level is detected once with cpuid (via the compiler's builtins) and may
// be lowered -- never raised past what the CPU supports -- with the
// environment variable DMOE_CPU=scalar|avx2|avx512|avx512vnni|avx512bf16 or with
// set_cpu_level_for_testing(). Thread-safe: the level is an atomic.
#pragma once

#include <string_view>

namespace dancemoe::kernels {

enum class CpuLevel : int {
  kScalar = 0,      // portable C++; the reference every other level is tested against
  kAvx2 = 1,        // AVX2 + FMA + F16C
  kAvx512 = 2,      // AVX-512 F/BW/VL/DQ
  kAvx512Vnni = 3,  // AVX-512 plus VNNI (vpdpbusd: int8 dot products, quantized matmuls)
  kAvx512Bf16 = 4,  // AVX-512 VNNI plus the BF16 dot-product instructions (vdpbf16ps)
};

std::string_view cpu_level_name(CpuLevel level);
// Parses "scalar", "avx2", "avx512", "avx512vnni", "avx512bf16"; false when unknown.
bool parse_cpu_level(std::string_view text, CpuLevel* level);

// The highest level this CPU (and OS, for the AVX-512 register state) supports.
CpuLevel detect_cpu_level();

// The level in use: detect_cpu_level(), lowered by DMOE_CPU when set.
CpuLevel active_cpu_level();

// Tests use this to run every level the CPU has; clamps to detect_cpu_level().
// Returns the level actually set.
CpuLevel set_cpu_level_for_testing(CpuLevel level);

}  // namespace dancemoe::kernels
