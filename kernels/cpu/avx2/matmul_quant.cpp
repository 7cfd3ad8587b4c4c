// matmul_quant and quantize_x at the AVX2 level (also used by the AVX-512
// level without VNNI): the shared 256-bit kernels of cpu/quant_simd.h with
// vpmaddubsw + vpmaddwd as the int8 dot product.
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"

#define DMOE_QUANT_SIMD_NS avx2
#include "kernels/cpu/quant_simd.h"
#include "kernels/interleave.h"

namespace dancemoe::kernels::avx2 {
namespace {

struct Avx2Dot {
  static constexpr bool kOneInstructionDot = false;
  static __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
  }
  static __m256i madd_add(__m256i acc, __m256i a16, __m256i b16) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a16, b16));
  }
};

}  // namespace

void matmul_quant(const MatmulArgs& args, const void* x_q) {
  if (args.w.layout != WeightLayout::kRows) {
    return matmul_deinterleaved<void>(args, x_q, matmul_quant);
  }
  matmul_quant_impl<Avx2Dot>(args, x_q);
}

void quantize_x(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out) {
  quantize_x_impl(type, x, n_tokens, cols, out);
}

}  // namespace dancemoe::kernels::avx2
