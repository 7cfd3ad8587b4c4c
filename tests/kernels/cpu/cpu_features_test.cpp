#include "kernels/cpu/cpu_features.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "kernels/kernels.h"

namespace dancemoe::kernels {

TEST_CASE("cpu features: level names round-trip") {
  for (CpuLevel level : {CpuLevel::kScalar, CpuLevel::kAvx2, CpuLevel::kAvx512,
                         CpuLevel::kAvx512Vnni, CpuLevel::kAvx512Bf16}) {
    CpuLevel parsed;
    REQUIRE(parse_cpu_level(cpu_level_name(level), &parsed));
    CHECK(parsed == level);
  }
  CpuLevel unused;
  CHECK_FALSE(parse_cpu_level("sse9", &unused));
}

TEST_CASE("cpu features: the active level never exceeds what the CPU supports") {
  const CpuLevel detected = detect_cpu_level();
  MESSAGE("detected CPU level: ", cpu_level_name(detected));
  CHECK(active_cpu_level() <= detected);
  CHECK(set_cpu_level_for_testing(CpuLevel::kAvx512Bf16) == detected);
  CHECK(set_cpu_level_for_testing(CpuLevel::kScalar) == CpuLevel::kScalar);
  CHECK(cpu_kernels().level == CpuLevel::kScalar);
  set_cpu_level_for_testing(detected);
  CHECK(cpu_kernels_for(CpuLevel::kScalar) != nullptr);
}

// The emulator check (tests/kernels/run_under_qemu.sh) runs this binary on an
// emulated CPU and states the level it must detect there.
TEST_CASE("cpu features: detects the level the environment expects, when one is given") {
  const char* expected = std::getenv("DMOE_EXPECT_CPU_LEVEL");
  if (expected == nullptr) {
    MESSAGE("DMOE_EXPECT_CPU_LEVEL not set; nothing to compare");
    return;
  }
  CpuLevel level;
  REQUIRE_MESSAGE(parse_cpu_level(expected, &level), "bad DMOE_EXPECT_CPU_LEVEL: ", expected);
  CHECK(std::string(cpu_level_name(detect_cpu_level())) == expected);
  if (cpu_kernels_for(level) == nullptr) {
    MESSAGE("this build has no ", expected, " kernels (DMOE_CPU_SIMD=OFF)");
    return;
  }
  CHECK(cpu_kernels().level == level);
}

}  // namespace dancemoe::kernels
