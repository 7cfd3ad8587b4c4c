// Element-wise conversions between f32 and bf16 / f16, bit-identical to the
// scalar reference (cpu/numeric.h), which also converts the tails: bf16 ->
// f32 is a shift, f16 -> f32 is vcvtph2ps (exact, subnormals included),
// f32 -> bf16 rounds to nearest even with integer arithmetic and turns NaN
// into a quiet NaN.
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/avx2/avx2_util.h"
#include "kernels/cpu/numeric.h"

namespace dancemoe::kernels::avx2 {

void bf16_to_f32(const uint16_t* in, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_bf16x8(in + i));
  for (; i < n; ++i) out[i] = bf16_to_float(in[i]);
}

void f16_to_f32(const uint16_t* in, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_f16x8(in + i));
  for (; i < n; ++i) out[i] = f16_to_float(in[i]);
}

void f32_to_bf16(const float* in, int64_t n, uint16_t* out) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i half_ulp = _mm256_set1_epi32(0x7fff);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i high = _mm256_srli_epi32(bits, 16);
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(bits, _mm256_add_epi32(_mm256_and_si256(high, one), half_ulp)), 16);
    const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    const __m256i result = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet), is_nan);
    // Every lane is <= 0xffff, so the unsigned saturating pack is exact.
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(out + i),
        _mm_packus_epi32(_mm256_castsi256_si128(result), _mm256_extracti128_si256(result, 1)));
  }
  for (; i < n; ++i) out[i] = float_to_bf16(in[i]);
}

}  // namespace dancemoe::kernels::avx2
