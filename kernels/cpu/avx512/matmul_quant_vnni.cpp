// matmul_quant at the AVX-512 VNNI level: the shared kernels of
// cpu/quant_simd.h -- 256-bit for Q8_0 / Q4_0 with vpdpbusd as the int8 dot
// product, 512-bit for the K formats with vpdpwssd applying each run's scale
// (one instruction instead of vpmaddwd + vpaddd), and the kernel of
// interleaved Q4_K / Q5_K / Q6_K / Q8_0 matrices (kernels/interleave.h) with vpdpbusd
// (Q8_0: vpdpwssd). Built with
// -mavx512vnni.
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"

#define DMOE_QUANT_SIMD_NS avx512vnni
#define DMOE_QUANT_SIMD_ZMM 1
#include "kernels/cpu/quant_simd.h"

namespace dancemoe::kernels::avx512vnni {
namespace {

struct VnniDot {
  static constexpr bool kOneInstructionDot = true;
  static __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_dpbusd_epi32(acc, u8, s8);
  }
  static __m256i madd_add(__m256i acc, __m256i a16, __m256i b16) {
    return _mm256_dpwssd_epi32(acc, a16, b16);
  }
  static __m512i madd_add512(__m512i acc, __m512i a16, __m512i b16) {
    return _mm512_dpwssd_epi32(acc, a16, b16);
  }
};

}  // namespace

void matmul_quant(const MatmulArgs& args, const void* x_q) {
  if (args.w.layout == WeightLayout::kInterleaved16) {
    return matmul_interleaved<VnniDot>(args, x_q);
  }
  matmul_quant_impl<VnniDot>(args, x_q);
}

void quantize_x(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out) {
  quantize_x_impl(type, x, n_tokens, cols, out);
}

void dequantize(WeightType type, const void* src, int64_t n_values, float* dst) {
  dequantize_impl(type, src, n_values, dst);
}

}  // namespace dancemoe::kernels::avx512vnni
