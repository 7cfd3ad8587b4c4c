// The 16-bit float conversions on special values: the scalar reference
// against known answers, then every SIMD level against the reference over
// every bf16 / f16 bit pattern and a sweep of f32 patterns.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/numeric.h"
#include "kernels/kernels.h"
#include "tests/support/cpu_levels.h"

namespace dancemoe::kernels {
namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

TEST_CASE("conversions: f32 -> bf16 rounds to nearest even and keeps NaN a NaN") {
  struct Case {
    uint32_t f32;
    uint16_t bf16;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f80},  // 1.0
      {0x3f808000u, 0x3f80},  // tie, even below: down
      {0x3f818000u, 0x3f82},  // tie, odd below: up
      {0x3f808001u, 0x3f81},  // just above the tie: up
      {0x3f807fffu, 0x3f80},  // just below the tie: down
      {0x00000000u, 0x0000},  // +0
      {0x80000000u, 0x8000},  // -0
      {0x00000001u, 0x0000},  // smallest subnormal rounds to +0
      {0x00010000u, 0x0001},  // a subnormal bf16 is kept
      {0x007fffffu, 0x0080},  // largest subnormal rounds up to the smallest normal
      {0x7f800000u, 0x7f80},  // +inf
      {0xff800000u, 0xff80},  // -inf
      {0x7f7fffffu, 0x7f80},  // FLT_MAX rounds to inf
      {0x7f7f7fffu, 0x7f7f},  // stays the largest finite bf16
      {0x7fc00000u, 0x7fc0},  // quiet NaN
      {0x7f800001u, 0x7fc0},  // signalling NaN whose payload would round away: quiet NaN
      {0xffa00000u, 0xffe0},  // negative signalling NaN: quieted, sign kept
  };
  const CpuKernels* reference = cpu_kernels_for(CpuLevel::kScalar);
  std::vector<float> in;
  for (const Case& c : cases) in.push_back(from_bits(c.f32));
  for (const CpuKernels* k : testing::all_cpu_kernels()) {
    // Offsets 0..16 put each value in the vector body and in the tail.
    for (int64_t offset : {0, 5, 16}) {
      std::vector<float> padded(static_cast<size_t>(offset), 1.0f);
      padded.insert(padded.end(), in.begin(), in.end());
      std::vector<uint16_t> out(padded.size());
      k->f32_to_bf16(padded.data(), static_cast<int64_t>(padded.size()), out.data());
      for (size_t i = 0; i < std::size(cases); ++i) {
        INFO(cpu_level_name(k->level), " offset ", offset, " input bits ", cases[i].f32);
        CHECK(out[static_cast<size_t>(offset) + i] == cases[i].bf16);
      }
    }
  }
  CHECK(reference->level == CpuLevel::kScalar);
}

TEST_CASE("conversions: f16 -> f32 handles subnormals, infinities and NaN") {
  struct Case {
    uint16_t f16;
    float f32;
  };
  const Case cases[] = {
      {0x3c00, 1.0f},           {0xc000, -2.0f},         {0x7bff, 65504.0f},
      {0x0001, 5.9604645e-8f},  {0x03ff, 6.0975552e-5f}, {0x0400, 6.1035156e-5f},
      {0x8001, -5.9604645e-8f}, {0x7c00, HUGE_VALF},     {0xfc00, -HUGE_VALF},
      {0x3555, 0.33325195f},
  };
  for (const CpuKernels* k : testing::all_cpu_kernels()) {
    INFO(cpu_level_name(k->level));
    std::vector<uint16_t> in;
    for (const Case& c : cases) in.push_back(c.f16);
    in.push_back(0x8000);  // -0
    in.push_back(0x7e00);  // quiet NaN
    in.push_back(0x7c01);  // signalling NaN
    in.push_back(0xfe00);  // negative NaN
    std::vector<float> out(in.size());
    k->f16_to_f32(in.data(), static_cast<int64_t>(in.size()), out.data());
    for (size_t i = 0; i < std::size(cases); ++i) CHECK(out[i] == cases[i].f32);
    const size_t n = std::size(cases);
    CHECK(to_bits(out[n]) == 0x80000000u);
    CHECK(std::isnan(out[n + 1]));
    CHECK(std::isnan(out[n + 2]));
    CHECK(std::isnan(out[n + 3]));
    CHECK(std::signbit(out[n + 3]));
  }
}

TEST_CASE("conversions: every bf16 and f16 bit pattern matches the reference") {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  const CpuKernels* reference = cpu_kernels_for(CpuLevel::kScalar);
  std::vector<float> want_bf16(all.size()), want_f16(all.size());
  reference->bf16_to_f32(all.data(), static_cast<int64_t>(all.size()), want_bf16.data());
  reference->f16_to_f32(all.data(), static_cast<int64_t>(all.size()), want_f16.data());
  for (const CpuKernels* k : testing::all_cpu_kernels()) {
    std::vector<float> got(all.size());
    k->bf16_to_f32(all.data(), static_cast<int64_t>(all.size()), got.data());
    size_t bf16_mismatches = 0;
    for (size_t i = 0; i < all.size(); ++i)
      bf16_mismatches += to_bits(got[i]) != to_bits(want_bf16[i]);
    k->f16_to_f32(all.data(), static_cast<int64_t>(all.size()), got.data());
    // NaN payloads may differ (hardware quiets signalling NaNs); NaN-ness may not.
    size_t f16_mismatches = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      const bool both_nan = std::isnan(got[i]) && std::isnan(want_f16[i]);
      f16_mismatches += !both_nan && to_bits(got[i]) != to_bits(want_f16[i]);
    }
    INFO(cpu_level_name(k->level));
    CHECK(bf16_mismatches == 0);
    CHECK(f16_mismatches == 0);
  }
}

TEST_CASE("conversions: f32 -> bf16 matches the reference on a sweep of bit patterns") {
  // Random patterns cover every class (normal, subnormal, inf, NaN) and the
  // low 16 bits near the rounding boundary are forced often.
  std::mt19937 rng(2024);
  std::vector<float> in(1 << 16);
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    if (i % 4 == 1) bits = (bits & 0xffff0000u) | 0x8000u;  // exact ties
    if (i % 4 == 2) bits &= 0x807fffffu;                    // subnormals
    if (i % 4 == 3) bits |= 0x7f800000u;                    // inf / NaN
    in[i] = from_bits(bits);
  }
  std::vector<uint16_t> want(in.size());
  cpu_kernels_for(CpuLevel::kScalar)
      ->f32_to_bf16(in.data(), static_cast<int64_t>(in.size()), want.data());
  for (const CpuKernels* k : testing::all_cpu_kernels()) {
    std::vector<uint16_t> got(in.size());
    k->f32_to_bf16(in.data(), static_cast<int64_t>(in.size()), got.data());
    INFO(cpu_level_name(k->level));
    CHECK(got == want);
  }
}

}  // namespace
}  // namespace dancemoe::kernels
