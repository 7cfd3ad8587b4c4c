// The GGUF (ggml) block formats, byte for byte, and the scalar helpers every
// level shares to read them. The full definitions -- which bits of which byte
// hold which value, and how a value is dequantized -- are in
// docs/quantization.md; in short (d, dmin: f16 scales; q: stored integers):
//
//   Q8_0  32 values   y[i] = d * qs[i]                          (qs int8)
//   Q4_0  32 values   y[i] = d * (q[i] - 8)                     (q 4 bits)
//         q[i] = qs[i] & 15, q[i + 16] = qs[i] >> 4 for i < 16
//   Q4_K  256 values, 8 sub-blocks j of 32, 6-bit scale sc[j] and min m[j]:
//         y = (d * sc[j]) * q - (dmin * m[j])                   (q 4 bits)
//         byte k of chunk c (qs[32 c + k]) holds value 64 c + k in its low
//         nibble (sub-block 2c) and 64 c + 32 + k in its high one (2c + 1)
//   Q5_K  as Q4_K, plus bit (2c) / (2c + 1) of qh[k] as the fifth bit of
//         those two values                                      (q 5 bits)
//   Q6_K  256 values in two halves of 128, 16 runs of 16 with int8 scales:
//         y = d * sc[p / 16] * (q - 32)                         (q 6 bits)
//         value l + 32 s of a half (l < 32, s < 4): low 4 bits from
//         ql[l + 32 (s & 1)] (low nibble for s < 2, high for s >= 2),
//         high 2 bits from qh[l] >> 2 s
//
// Blocks are packed back to back (no padding), so a block is only 2-byte
// aligned (Q6_K's 210 bytes not even that): read multi-byte fields with
// memcpy. Everything here is `static inline`: see numeric.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cpu/numeric.h"

namespace dancemoe::kernels {

inline constexpr int kQK = 32;    // values per Q8_0 / Q4_0 block
inline constexpr int kQKK = 256;  // values per K super-block

struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[kQK];
};
struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};
struct BlockQ4_K {
  uint16_t d;     // f16, scale of the sub-block scales
  uint16_t dmin;  // f16, scale of the sub-block mins
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;  // f16
};

static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

// The f16 at p (any alignment) as f32.
static inline float load_f16(const void* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return f16_to_float(h);
}

// f32 -> IEEE binary16, round to nearest even, with overflow to infinity
// and subnormals; used by the quantizers for the block scales.
static inline uint16_t float_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < half the smallest subnormal
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    // value = mantissa * 2^(exponent - 150); in units of 2^-24 (the half
    // subnormal step) that is mantissa >> (126 - exponent), shift 14 .. 24.
    const uint32_t shift = 126 - exponent;
    uint32_t result = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits.
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

// Sub-block j's 6-bit scale and min of a Q4_K / Q5_K super-block: scales[0..3]
// and [4..7] hold sc[0..3] and m[0..3] in their low 6 bits; sc[4..7] and
// m[4..7] have their low 4 bits in scales[8..11] (low / high nibble) and their
// top 2 bits in the top 2 bits of scales[0..3] / scales[4..7].
static inline void k_scale_min(const uint8_t* scales, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

}  // namespace dancemoe::kernels
