// Element-wise conversions between f32 and bf16 / f16, bit-identical to the
// scalar reference (cpu/numeric.h): bf16 -> f32 is a shift, f16 -> f32 is
// vcvtph2ps (exact, subnormals included), f32 -> bf16 rounds to nearest even
// with integer arithmetic (vcvtneps2bf16 would flush subnormals) and turns
// NaN into a quiet NaN.
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/avx512_util.h"

namespace dancemoe::kernels::avx512 {
namespace {

inline __m512i round_to_bf16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i quiet_nan = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  const __mmask16 is_nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_blend_epi32(is_nan, rounded, quiet_nan);
}

}  // namespace

void bf16_to_f32(const uint16_t* in, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, load_bf16x16(in + i));
  if (i < n) {
    const __mmask16 m = low_mask16(n - i);
    _mm512_mask_storeu_ps(out + i, m, load_bf16x16_masked(in + i, m));
  }
}

void f16_to_f32(const uint16_t* in, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, load_f16x16(in + i));
  if (i < n) {
    const __mmask16 m = low_mask16(n - i);
    _mm512_mask_storeu_ps(out + i, m, load_f16x16_masked(in + i, m));
  }
}

void f32_to_bf16(const float* in, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtepi32_epi16(round_to_bf16(_mm512_loadu_ps(in + i))));
  }
  if (i < n) {
    const __mmask16 m = low_mask16(n - i);
    _mm512_mask_cvtepi32_storeu_epi16(out + i, m, round_to_bf16(_mm512_maskz_loadu_ps(m, in + i)));
  }
}

}  // namespace dancemoe::kernels::avx512
