// The register-blocked matmul used by every AVX-512 matmul:
// y[t, r] = sum_c x[t, c] W[r, c].
//
// A tile computes R rows x T tokens: per step of K::kStep columns it loads R
// weight vectors (widened to f32 in registers, never in memory, or kept as
// bf16 pairs for vdpbf16ps) and T activation vectors, and does R*T
// multiply-adds into R*T accumulators, so every weight load is
// reused by T tokens and every activation load by R rows. Accumulators hold
// 16 partial sums each; reduce4() folds them at the end of the row. The
// column tail is a masked step (masked lanes load as 0).
//
// Blocking: rows outer, tokens inner. The R weight rows of a tile stay in L1
// while every token block passes over them, so each weight byte comes from
// DRAM once; the activations (at most a few hundred KiB) stay in L2.
//
// Internal linkage only (anonymous namespace): see avx512_util.h.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/avx512/avx512_util.h"
#include "kernels/kernels.h"

namespace dancemoe::kernels::avx512 {
namespace {

// Widening kernels: 16 columns per step, weights and activations widened to
// f32 in registers, f32 FMA. A kernel K provides the element types, the step,
// full and tail (n < kStep valid columns, the rest read as 0) loads, and madd.
struct F32Source {
  using Elem = float;
  static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 load_tail(const float* p, int64_t n) {
    return _mm512_maskz_loadu_ps(low_mask16(n), p);
  }
};
struct BF16Source {
  using Elem = uint16_t;
  static __m512 load(const uint16_t* p) { return load_bf16x16(p); }
  static __m512 load_tail(const uint16_t* p, int64_t n) {
    return load_bf16x16_masked(p, low_mask16(n));
  }
};
struct F16Source {
  using Elem = uint16_t;
  static __m512 load(const uint16_t* p) { return load_f16x16(p); }
  static __m512 load_tail(const uint16_t* p, int64_t n) {
    return load_f16x16_masked(p, low_mask16(n));
  }
};

template <class WSource, class XSource>
struct WideningKernel {
  using WElem = typename WSource::Elem;
  using XElem = typename XSource::Elem;
  using WVec = __m512;
  using XVec = __m512;
  static constexpr int64_t kStep = 16;
  static WVec load_w(const WElem* p) { return WSource::load(p); }
  static WVec load_w_tail(const WElem* p, int64_t n) { return WSource::load_tail(p, n); }
  static XVec load_x(const XElem* p) { return XSource::load(p); }
  static XVec load_x_tail(const XElem* p, int64_t n) { return XSource::load_tail(p, n); }
  static __m512 madd(__m512 acc, WVec w, XVec x) { return _mm512_fmadd_ps(w, x, acc); }
};

// One tile: rows [0, n_rows) of w and tokens [0, T) of x, both already
// offset to the tile's corner. n_rows <= R: missing rows re-read the last
// valid row and are not stored. y points at y[t0, r0].
template <class K>
struct TileArgs {
  const typename K::WElem* w;
  const typename K::XElem* x;
  int64_t cols;  // also the row stride of w and x
  int64_t n_rows;
  float* y;
  int64_t y_stride;
  int64_t prefetch;  // elements ahead in w to prefetch (0: none)
};

template <class K, int R, int T>
void matmul_tile(const TileArgs<K>& a) {
  const typename K::WElem* w_rows[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) w_rows[r] = a.w + (r < a.n_rows ? r : a.n_rows - 1) * a.cols;

  __m512 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }

  int64_t c = 0;
  for (; c + K::kStep <= a.cols; c += K::kStep) {
    typename K::WVec wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      if (a.prefetch != 0) {
        _mm_prefetch(reinterpret_cast<const char*>(w_rows[r] + c + a.prefetch), _MM_HINT_T0);
      }
      wv[r] = K::load_w(w_rows[r] + c);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const typename K::XVec xv = K::load_x(a.x + t * a.cols + c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = K::madd(acc[r][t], wv[r], xv);
    }
  }
  if (c < a.cols) {
    const int64_t n = a.cols - c;
    typename K::WVec wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = K::load_w_tail(w_rows[r] + c, n);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const typename K::XVec xv = K::load_x_tail(a.x + t * a.cols + c, n);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = K::madd(acc[r][t], wv[r], xv);
    }
  }

  const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 2
    for (int r0 = 0; r0 < R; r0 += 4) {
      const __m128 sums =
          reduce4(acc[r0][t], r0 + 1 < R ? acc[r0 + 1][t] : zero,
                  r0 + 2 < R ? acc[r0 + 2][t] : zero, r0 + 3 < R ? acc[r0 + 3][t] : zero);
      const int64_t valid = a.n_rows - r0;
      if (valid >= 4) {
        _mm_storeu_ps(a.y + t * a.y_stride + r0, sums);
      } else if (valid > 0) {
        _mm_mask_storeu_ps(a.y + t * a.y_stride + r0, static_cast<__mmask8>((1u << valid) - 1u),
                           sums);
      }
    }
  }
}

// Rows outer (R at a time), tokens inner in balanced blocks of at most 6.
// n_tokens <= 2 (decode) uses 8-row tiles with one prefetch stream per row.
template <class K>
void matmul_blocked(const MatmulArgs& args, const typename K::XElem* x) {
  const auto* w = static_cast<const typename K::WElem*>(args.w.data);
  const int64_t cols = args.w.cols;
  const int64_t n_tokens = args.n_tokens;
  if (n_tokens <= 0 || args.row_end <= args.row_begin) return;

  if (n_tokens <= 2) {
    constexpr int kRows = 8;
    for (int64_t r = args.row_begin; r < args.row_end; r += kRows) {
      const int64_t n_rows = args.row_end - r < kRows ? args.row_end - r : kRows;
      TileArgs<K> tile{w + r * cols, x, cols, n_rows, args.y + r, args.y_stride, kRows * cols};
      if (n_tokens == 1) {
        matmul_tile<K, kRows, 1>(tile);
      } else {
        matmul_tile<K, kRows, 2>(tile);
      }
    }
    return;
  }

  constexpr int kRows = 4;
  constexpr int64_t kMaxTokens = 6;
  const int64_t n_blocks = (n_tokens + kMaxTokens - 1) / kMaxTokens;
  const int64_t base = n_tokens / n_blocks;
  const int64_t n_big = n_tokens % n_blocks;  // blocks of base + 1 tokens
  for (int64_t r = args.row_begin; r < args.row_end; r += kRows) {
    const int64_t n_rows = args.row_end - r < kRows ? args.row_end - r : kRows;
    int64_t t = 0;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t n_block = base + (b < n_big ? 1 : 0);
      TileArgs<K> tile{w + r * cols,
                       x + t * cols,
                       cols,
                       n_rows,
                       args.y + t * args.y_stride + r,
                       args.y_stride,
                       0};
      switch (n_block) {
        case 1:
          matmul_tile<K, kRows, 1>(tile);
          break;
        case 2:
          matmul_tile<K, kRows, 2>(tile);
          break;
        case 3:
          matmul_tile<K, kRows, 3>(tile);
          break;
        case 4:
          matmul_tile<K, kRows, 4>(tile);
          break;
        case 5:
          matmul_tile<K, kRows, 5>(tile);
          break;
        default:
          matmul_tile<K, kRows, 6>(tile);
          break;
      }
      t += n_block;
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels::avx512
