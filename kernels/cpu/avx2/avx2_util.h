// Vector helpers shared by the AVX2 kernels in this folder. Include only from
// TUs compiled with the AVX2 flags (kernels/CMakeLists.txt).
//
// Everything is in an anonymous namespace: internal linkage, so each TU keeps
// its own copy and no AVX2 code can become the program-wide definition of a
// symbol that baseline code also calls (see cpu/numeric.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace dancemoe::kernels::avx2 {
namespace {

// 8 bf16 values -> f32: a bf16 is the top half of an f32.
inline __m256 load_bf16x8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// [sum(a), sum(b), sum(c), sum(d)]
inline __m128 reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
  // Per 128-bit half: [a, b, c, d] partial sums after two rounds of hadd.
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

inline float reduce(__m256 a) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// exp(x), relative error about 2e-7 over the whole range. Range reduction
// x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for exactness), Cephes
// degree-6 polynomial for exp(r), then scaling by 2^n in two halves so that
// overflow gives inf and underflow degrades gradually to 0. NaN propagates.
inline __m256 exp_ps(__m256 x) {
  // max/min return their second operand when one is NaN: keep x second.
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), _mm256_max_ps(_mm256_set1_ps(-104.0f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // n in [-150, 128]: each half in [-75, 64] is a normal power of two.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

}  // namespace
}  // namespace dancemoe::kernels::avx2
