// matmul_quant at the AVX-512 VNNI level: the shared 256-bit kernels of
// cpu/quant_simd.h with vpdpbusd as the int8 dot product (one instruction
// instead of vpmaddubsw + vpmaddwd + vpaddd for Q8_0 / Q4_0; the K formats
// scale each run in vpmaddwd either way). Built with -mavx512vnni; with
// AVX-512VL the kernels also get 32 vector registers.
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"

#define DMOE_QUANT_SIMD_NS avx512vnni
#include "kernels/cpu/quant_simd.h"

namespace dancemoe::kernels::avx512vnni {
namespace {

struct VnniDot {
  static __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_dpbusd_epi32(acc, u8, s8);
  }
};

}  // namespace

void matmul_quant(const MatmulArgs& args, const void* x_q) {
  matmul_quant_impl<VnniDot>(args, x_q);
}

void quantize_x(WeightType type, const float* x, int64_t n_tokens, int64_t cols, void* out) {
  quantize_x_impl(type, x, n_tokens, cols, out);
}

}  // namespace dancemoe::kernels::avx512vnni
