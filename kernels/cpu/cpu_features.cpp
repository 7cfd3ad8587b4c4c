#include "kernels/cpu/cpu_features.h"

#include <atomic>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace dancemoe::kernels {
namespace {

CpuLevel level_from_environment() {
  CpuLevel detected = detect_cpu_level();
  const char* requested = std::getenv("DMOE_CPU");
  CpuLevel level;
  if (requested == nullptr || !parse_cpu_level(requested, &level)) return detected;
  return level < detected ? level : detected;
}

std::atomic<int>& active_level_storage() {
  static std::atomic<int> level{static_cast<int>(level_from_environment())};
  return level;
}

}  // namespace

std::string_view cpu_level_name(CpuLevel level) {
  switch (level) {
    case CpuLevel::kScalar:
      return "scalar";
    case CpuLevel::kAvx2:
      return "avx2";
    case CpuLevel::kAvx512:
      return "avx512";
    case CpuLevel::kAvx512Vnni:
      return "avx512vnni";
    case CpuLevel::kAvx512Bf16:
      return "avx512bf16";
  }
  return "unknown";
}

bool parse_cpu_level(std::string_view text, CpuLevel* level) {
  for (CpuLevel candidate : {CpuLevel::kScalar, CpuLevel::kAvx2, CpuLevel::kAvx512,
                             CpuLevel::kAvx512Vnni, CpuLevel::kAvx512Bf16}) {
    if (text == cpu_level_name(candidate)) {
      *level = candidate;
      return true;
    }
  }
  return false;
}

namespace {

CpuLevel probe_cpu_level() {
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's cpu model also checks XCR0, so a feature reported here has its
  // register state enabled by the OS.
  __builtin_cpu_init();
  // F16C (CPUID.1:ECX bit 29) and AVX512_BF16 (CPUID.(7,1):EAX bit 5) are read
  // with cpuid directly: clang before 15 rejects both names in
  // __builtin_cpu_supports. Their register state is the AVX / AVX-512 state
  // the builtins have already checked.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  if (!avx2) return CpuLevel::kScalar;
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (!avx512) return CpuLevel::kAvx2;
  // AVX512_VNNI: CPUID.(7,0):ECX bit 11. Every CPU with AVX512_BF16 has it;
  // the BF16 level requires it anyway so that the levels stay ordered.
  const bool vnni = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 11)) != 0;
  if (!vnni) return CpuLevel::kAvx512;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0) {
    return CpuLevel::kAvx512Bf16;
  }
  return CpuLevel::kAvx512Vnni;
#else
  return CpuLevel::kScalar;
#endif
}

}  // namespace

// Probed once: cpuid traps to the hypervisor on virtual machines (microseconds
// per call), and the kernel table is looked up several times per layer.
CpuLevel detect_cpu_level() {
  static const CpuLevel kDetected = probe_cpu_level();
  return kDetected;
}

CpuLevel active_cpu_level() { return static_cast<CpuLevel>(active_level_storage().load()); }

CpuLevel set_cpu_level_for_testing(CpuLevel level) {
  CpuLevel detected = detect_cpu_level();
  CpuLevel chosen = level < detected ? level : detected;
  active_level_storage().store(static_cast<int>(chosen));
  return chosen;
}

}  // namespace dancemoe::kernels
