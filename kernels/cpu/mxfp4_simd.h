// The 256-bit SIMD MXFP4 kernels (cpu/mxfp4_block.h), included by
// cpu/quant_simd.h, whose row walk (tokens, row chunks) and Isa policy they
// share: the AVX2 level and the AVX-512 levels (VNNI through Isa::dot_u8s8).
//
// One block is one 256-bit vector: the 16 bytes of codes split into low
// nibbles (values 0..15) and high nibbles (16..31), and vpshufb looks the
// codes up in kMxfp4Levels (doubled E2M1 values, -12..12). The products
// with the int8 activations go through vpmaddubsw as Q8_0's do: |level| as
// the unsigned operand, the activation with the level's sign; the largest
// pair sum is 2 x 12 x 127, far inside int16. Every integer block sum equals
// the scalar reference's (cpu/scalar/mxfp4.cpp); the block's scale
// 2^(e - 128) x dx is one f32 product, then an FMA into the row's sum.
//
// The including TU defines DMOE_QUANT_SIMD_NS. Internal linkage only
// (anonymous namespace): see cpu/numeric.h.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/mxfp4_block.h"
#include "kernels/quant_format.h"

#ifndef DMOE_QUANT_SIMD_NS
#error "define DMOE_QUANT_SIMD_NS before including mxfp4_simd.h"
#endif

namespace dancemoe::kernels::DMOE_QUANT_SIMD_NS {
namespace {

// The 32 levels of a block as int8 in value order.
inline __m256i mxfp4_levels(const uint8_t* blk) {
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Levels)));
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 1));
  const __m256i codes =
      _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), _mm256_set1_epi8(0x0F));
  return _mm256_shuffle_epi8(table, codes);
}

// One row of MXFP4 weights against T quantized activation rows x[0..T):
// out[t] is token t's vector of partial sums (its lanes add up to the dot
// product; the caller reduces rows four at a time).
template <class Isa, int T>
void row_mxfp4(const uint8_t* w, int64_t cols, const QuantizedXRow* x, __m256* out) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const int64_t n_blocks = cols / kMxfp4Values;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * kMxfp4BlockBytes;
    const __m256i q = mxfp4_levels(blk);
    const __m256i aq = _mm256_sign_epi8(q, q);
    const float d = mxfp4_scale(blk[0]);
    for (int t = 0; t < T; ++t) {
      const __m256i xs = _mm256_sign_epi8(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].q + b * kMxfp4Values)), q);
      const __m256i p = Isa::dot_u8s8(_mm256_setzero_si256(), aq, xs);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * x[t].d[b]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = acc[t];
}

// Dequantization, bit-identical to the reference: level x scale is exact.
inline void dequantize_mxfp4_simd(const void* src, int64_t n_values, float* dst) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < n_values / kMxfp4Values; ++b) {
    const uint8_t* blk = bytes + b * kMxfp4BlockBytes;
    const __m256i q = mxfp4_levels(blk);
    const __m256 d = _mm256_set1_ps(mxfp4_scale(blk[0]));
    const __m128i halves[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
    for (int h = 0; h < 2; ++h) {
      const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(halves[h]));
      const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(halves[h], 8)));
      _mm256_storeu_ps(dst + b * kMxfp4Values + 16 * h, _mm256_mul_ps(lo, d));
      _mm256_storeu_ps(dst + b * kMxfp4Values + 16 * h + 8, _mm256_mul_ps(hi, d));
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels::DMOE_QUANT_SIMD_NS
