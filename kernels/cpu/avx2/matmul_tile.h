// The register-blocked matmul used by the AVX2 matmul_f32 and matmul_bf16:
// y[t, r] = sum_c x[t, c] W[r, c].
//
// A tile computes R rows x T tokens: per step of 8 columns it loads R weight
// vectors (widened to f32 in registers, never in memory) and T activation
// vectors, and does R*T FMAs into R*T accumulators, so every weight load is
// reused by T tokens and every activation load by R rows. With 16 ymm
// registers the tiles are small: 8x1 for decode, 4x2 and 4x3 otherwise.
// Columns past the last multiple of 8 are added by a scalar loop.
//
// Blocking: rows outer, tokens inner, so each weight byte comes from DRAM
// once; the tile's weight rows stay in L1 while the token blocks pass.
//
// Internal linkage only (anonymous namespace): see avx2_util.h.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/avx2/avx2_util.h"
#include "kernels/cpu/numeric.h"
#include "kernels/kernels.h"

namespace dancemoe::kernels::avx2 {
namespace {

// Sources of 8 consecutive values widened to f32, and of one value.
struct F32Source {
  using Elem = float;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static float scalar(const float* p) { return *p; }
};
struct BF16Source {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) { return load_bf16x8(p); }
  static float scalar(const uint16_t* p) { return bf16_to_float(*p); }
};
struct F16Source {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) { return load_f16x8(p); }
  static float scalar(const uint16_t* p) { return f16_to_float(*p); }
};

// One tile: rows [0, n_rows) of w and tokens [0, T) of x, both already
// offset to the tile's corner. n_rows <= R: missing rows re-read the last
// valid row and are not stored. y points at y[t0, r0].
template <class WSource, class XSource>
struct TileArgs {
  const typename WSource::Elem* w;
  const typename XSource::Elem* x;
  int64_t cols;  // also the row stride of w and x
  int64_t n_rows;
  float* y;
  int64_t y_stride;
};

template <class WSource, class XSource, int R, int T>
void matmul_tile(const TileArgs<WSource, XSource>& a) {
  const typename WSource::Elem* w_rows[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) w_rows[r] = a.w + (r < a.n_rows ? r : a.n_rows - 1) * a.cols;

  __m256 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }

  const int64_t cols_vec = a.cols & ~int64_t{7};
  for (int64_t c = 0; c < cols_vec; c += 8) {
    __m256 xv[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) xv[t] = XSource::load(a.x + t * a.cols + c);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 wv = WSource::load(w_rows[r] + c);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }

  const __m256 zero = _mm256_setzero_ps();
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 2
    for (int r0 = 0; r0 < R; r0 += 4) {
      float sums[4];
      _mm_storeu_ps(
          sums, reduce4(acc[r0][t], r0 + 1 < R ? acc[r0 + 1][t] : zero,
                        r0 + 2 < R ? acc[r0 + 2][t] : zero, r0 + 3 < R ? acc[r0 + 3][t] : zero));
      for (int r = r0; r < r0 + 4 && r < a.n_rows; ++r) {
        const typename XSource::Elem* xt = a.x + t * a.cols;
        float tail = 0.0f;
        for (int64_t c = cols_vec; c < a.cols; ++c) {
          tail += WSource::scalar(w_rows[r] + c) * XSource::scalar(xt + c);
        }
        a.y[t * a.y_stride + r] = sums[r - r0] + tail;
      }
    }
  }
}

// Rows outer, tokens inner in balanced blocks of at most kMaxTokens.
template <class WSource, class XSource>
void matmul_blocked(const MatmulArgs& args, const typename XSource::Elem* x) {
  const auto* w = static_cast<const typename WSource::Elem*>(args.w.data);
  const int64_t cols = args.w.cols;
  const int64_t n_tokens = args.n_tokens;
  if (n_tokens <= 0 || args.row_end <= args.row_begin) return;

  if (n_tokens == 1) {
    constexpr int kRows = 8;
    for (int64_t r = args.row_begin; r < args.row_end; r += kRows) {
      const int64_t n_rows = args.row_end - r < kRows ? args.row_end - r : kRows;
      matmul_tile<WSource, XSource, kRows, 1>(
          {w + r * cols, x, cols, n_rows, args.y + r, args.y_stride});
    }
    return;
  }

  constexpr int kRows = 4;
  constexpr int64_t kMaxTokens = 3;
  const int64_t n_blocks = (n_tokens + kMaxTokens - 1) / kMaxTokens;
  const int64_t base = n_tokens / n_blocks;
  const int64_t n_big = n_tokens % n_blocks;  // blocks of base + 1 tokens
  for (int64_t r = args.row_begin; r < args.row_end; r += kRows) {
    const int64_t n_rows = args.row_end - r < kRows ? args.row_end - r : kRows;
    int64_t t = 0;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t n_block = base + (b < n_big ? 1 : 0);
      const TileArgs<WSource, XSource> tile{
          w + r * cols, x + t * cols, cols, n_rows, args.y + t * args.y_stride + r, args.y_stride};
      switch (n_block) {
        case 1:
          matmul_tile<WSource, XSource, kRows, 1>(tile);
          break;
        case 2:
          matmul_tile<WSource, XSource, kRows, 2>(tile);
          break;
        default:
          matmul_tile<WSource, XSource, kRows, 3>(tile);
          break;
      }
      t += n_block;
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels::avx2
