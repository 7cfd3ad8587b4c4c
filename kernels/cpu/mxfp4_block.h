// MXFP4 (OCP Microscaling FP4) as GGUF (ggml, type MXFP4 = 39) stores it, and
// the scalar helpers every level shares to read it:
//
//   block of 32 values, 17 bytes:  uint8_t e;  uint8_t qs[16];
//   byte j of qs holds value j in its low nibble and value j + 16 in its high
//   one; a nibble is an E2M1 code (bit 3 sign, bits 0-2 magnitude index).
//   y[i] = kMxfp4Levels[code_i] * 2^(e - 128)
//
// kMxfp4Levels are the E2M1 values {0, 0.5, 1, 1.5, 2, 3, 4, 6} doubled, so
// that they are integers (they fit int8 for the integer dot products); the
// scale 2^(e - 128) is then half the E8M0 scale 2^(e - 127). e = 0 and 1 give
// the f32 subnormals 2^-128 and 2^-127; e = 255 is 2^127 (the OCP spec's NaN
// encoding is not produced by the quantizer and is read as a plain exponent,
// as ggml does).
//
// gpt-oss publishes the same values in another layout (separate tensors of
// 16-byte blocks and of e bytes, value 2k in the low nibble of byte k);
// common/model/published_mxfp4.h converts.
//
// Everything here is `static inline`: see numeric.h.
#pragma once

#include <cstdint>
#include <cstring>

namespace dancemoe::kernels {

inline constexpr int kMxfp4Values = 32;  // values per block
inline constexpr int kMxfp4BlockBytes = 17;

struct BlockMXFP4 {
  uint8_t e;  // E8M0 shared exponent
  uint8_t qs[kMxfp4Values / 2];
};
static_assert(sizeof(BlockMXFP4) == kMxfp4BlockBytes);

// E2M1 code -> value x 2.
inline constexpr int8_t kMxfp4Levels[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128) as f32 (exact for every e).
static inline float mxfp4_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The E2M1 code of value i (0..31) of a block.
static inline int mxfp4_code(const uint8_t* qs, int i) {
  return i < kMxfp4Values / 2 ? (qs[i] & 0xF) : (qs[i - kMxfp4Values / 2] >> 4);
}

}  // namespace dancemoe::kernels
