// Vector helpers shared by the AVX-512 kernels in this folder. Include only
// from TUs compiled with the AVX-512 flags (kernels/CMakeLists.txt).
//
// Everything is in an anonymous namespace: internal linkage, so each TU keeps
// its own copy and no AVX-512 code can become the program-wide definition of
// a symbol that baseline or AVX2 code also calls (see cpu/numeric.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace dancemoe::kernels::avx512 {
namespace {

// Mask with the low n bits set, n in [0, 16] (resp. [0, 32]).
inline __mmask16 low_mask16(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline __mmask32 low_mask32(int64_t n) {
  return n >= 32 ? 0xffffffffu : static_cast<__mmask32>((1u << n) - 1u);
}

// 16 bf16 values -> f32: a bf16 is the top half of an f32.
inline __m512 bf16x16_to_f32(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline __m512 load_bf16x16(const uint16_t* p) {
  return bf16x16_to_f32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load_bf16x16_masked(const uint16_t* p, __mmask16 m) {
  return bf16x16_to_f32(_mm256_maskz_loadu_epi16(m, p));
}
inline __m512 load_f16x16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load_f16x16_masked(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// [sum(a), sum(b), sum(c), sum(d)]: four horizontal sums sharing shuffles.
inline __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // Per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3] and the same for c, d.
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  // Per 128-bit lane: [a, b, c, d] partial sums.
  const __m512 abcd = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 half = _mm256_add_ps(_mm512_castps512_ps256(abcd), _mm512_extractf32x8_ps(abcd, 1));
  return _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
}

// exp(x), relative error about 2e-7 over the whole range. Range reduction
// x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for exactness), Cephes
// degree-6 polynomial for exp(r), then vscalefps multiplies by 2^n handling
// overflow (inf), gradual underflow (subnormals) and 0. NaN propagates.
inline __m512 exp_ps(__m512 x) {
  // max/min return their second operand when one is NaN: keep x second.
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// x[0, n) = exp(x - shift) in place; returns their sum (softmax, and the
// attention kernel's online softmax).
inline float exp_shifted_sum(float* x, int64_t n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = low_mask16(n - i < 16 ? n - i : 16);
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s));
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(m, e));
    _mm512_mask_storeu_ps(x + i, m, e);
  }
  return _mm512_reduce_add_ps(sum);
}

}  // namespace
}  // namespace dancemoe::kernels::avx512
