#include "kernels/cpu/cpu_features.h"

#include <atomic>
#include <cstdlib>

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
    case CpuLevel::kAvx512Bf16:
      return "avx512bf16";
  }
  return "unknown";
}

bool parse_cpu_level(std::string_view text, CpuLevel* level) {
  for (CpuLevel candidate :
       {CpuLevel::kScalar, CpuLevel::kAvx2, CpuLevel::kAvx512, CpuLevel::kAvx512Bf16}) {
    if (text == cpu_level_name(candidate)) {
      *level = candidate;
      return true;
    }
  }
  return false;
}

CpuLevel detect_cpu_level() {
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's cpu model also checks XCR0, so a feature reported here has its
  // register state enabled by the OS.
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  if (!avx2) return CpuLevel::kScalar;
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (!avx512) return CpuLevel::kAvx2;
  if (__builtin_cpu_supports("avx512bf16")) return CpuLevel::kAvx512Bf16;
  return CpuLevel::kAvx512;
#else
  return CpuLevel::kScalar;
#endif
}

CpuLevel active_cpu_level() { return static_cast<CpuLevel>(active_level_storage().load()); }

CpuLevel set_cpu_level_for_testing(CpuLevel level) {
  CpuLevel detected = detect_cpu_level();
  CpuLevel chosen = level < detected ? level : detected;
  active_level_storage().store(static_cast<int>(chosen));
  return chosen;
}

}  // namespace dancemoe::kernels
