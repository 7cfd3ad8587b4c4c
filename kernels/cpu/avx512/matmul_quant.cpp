// matmul_quant at the AVX-512 level without VNNI: the shared kernels of
// cpu/quant_simd.h, 512-bit for the K formats (vpmaddubsw + vpmaddwd), and
// the 256-bit Q8_0 / Q4_0 ones.
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"

#define DMOE_QUANT_SIMD_NS avx512
#define DMOE_QUANT_SIMD_ZMM 1
#include "kernels/cpu/quant_simd.h"
#include "kernels/interleave.h"

namespace dancemoe::kernels::avx512 {
namespace {

struct Avx512Dot {
  static constexpr bool kOneInstructionDot = false;
  static __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
  }
  static __m256i madd_add(__m256i acc, __m256i a16, __m256i b16) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a16, b16));
  }
  static __m512i madd_add512(__m512i acc, __m512i a16, __m512i b16) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a16, b16));
  }
};

}  // namespace

void matmul_quant(const MatmulArgs& args, const void* x_q) {
  if (args.w.layout != WeightLayout::kRows) {
    return matmul_deinterleaved<void>(args, x_q, matmul_quant);
  }
  matmul_quant_impl<Avx512Dot>(args, x_q);
}

void quantize_x(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out) {
  quantize_x_impl(type, x, n_tokens, cols, out);
}

void dequantize(WeightType type, const void* src, int64_t n_values, float* dst) {
  dequantize_impl(type, src, n_values, dst);
}

}  // namespace dancemoe::kernels::avx512
