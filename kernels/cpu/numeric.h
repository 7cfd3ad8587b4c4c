// Scalar conversions between f32 and the 16-bit float formats, shared by the
// reference kernels and the SIMD tails. Header-only and free of intrinsics.
//
// Every function here is `static inline` (internal linkage) on purpose: this
// header is included by translation units compiled with -mavx2 or -mavx512f.
// A plain `inline` function is emitted as a weak symbol in every TU that does
// not inline it, and the linker keeps one copy for the whole program -- possibly
// the AVX-512 one, which would then crash the scalar and AVX2 callers on a CPU
// without AVX-512. With internal linkage each TU keeps its own copy, compiled
// with that TU's flags and called only from it.
#pragma once

#include <cstdint>
#include <cstring>

namespace dancemoe::kernels {

static inline float bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest even; NaN stays a (quiet) NaN.
static inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// IEEE 754 binary16 -> f32, including subnormals, infinities and NaN.
static inline float f16_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int shift = 0;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3ffu;
      bits = sign | (static_cast<uint32_t>(127 - 15 - shift + 1) << 23) | (mantissa << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace dancemoe::kernels
