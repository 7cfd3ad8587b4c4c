// y[t, r] = sum_c x[t, c] W[r, c] with bf16 activations and weights, using
// vdpbf16ps: each f32 lane accumulates the products of one pair of adjacent
// columns, so 32 columns per instruction and no widening at all. f32
// accumulation. Built with -mavx512bf16; used by the avx512bf16 level only.
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/matmul_tile.h"

namespace dancemoe::kernels::avx512bf16 {
namespace {

struct Bf16DotKernel {
  using WElem = uint16_t;
  using XElem = uint16_t;
  using WVec = __m512i;
  using XVec = __m512i;
  static constexpr int64_t kStep = 32;
  static __m512i load(const uint16_t* p) { return _mm512_loadu_si512(p); }
  // Masked lanes read as +0.0, whose products add nothing.
  static __m512i load_tail(const uint16_t* p, int64_t n) {
    return _mm512_maskz_loadu_epi16(avx512::low_mask32(n), p);
  }
  static WVec load_w(const uint16_t* p) { return load(p); }
  static WVec load_w_tail(const uint16_t* p, int64_t n) { return load_tail(p, n); }
  static XVec load_x(const uint16_t* p) { return load(p); }
  static XVec load_x_tail(const uint16_t* p, int64_t n) { return load_tail(p, n); }
  static __m512 madd(__m512 acc, __m512i w, __m512i x) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(w), reinterpret_cast<__m512bh>(x));
  }
};

}  // namespace

void matmul_bf16(const MatmulArgs& args, const uint16_t* x_bf16) {
  avx512::matmul_blocked<Bf16DotKernel>(args, x_bf16);
}

}  // namespace dancemoe::kernels::avx512bf16
