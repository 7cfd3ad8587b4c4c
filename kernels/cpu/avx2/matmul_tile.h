// The matmul driver and micro-kernels shared by the AVX2 matmul_f32 and
// matmul_bf16: y[t, r] = sum_c x[t, c] W[r, c], W: [rows, cols] row-major,
// x: [n_tokens, cols]. Same structure as the AVX-512 driver
// (cpu/avx512/matmul_tile.h, whose header explains the choices):
// - decode and batched decode (n_tokens <= 8): matmul_row_tiles() walks W in
//   tiles of R consecutive rows (4 x 1, 4 x 2, 3 x 3, 3 x 4 accumulators; 5 to
//   8 tokens as two such blocks on each tile while it is in L1), one reduce4
//   per token per tile, each step prefetching one line of the tile two tiles
//   ahead into L1. Against walking one row at a time (one sequential stream,
//   a reduction per row): weights in cache 0.71-0.87x the time, from DRAM
//   0.86-1.03x for one token and 0.72-0.89x for two or three (interleaved
//   microbenchmark on Zen 3, 256x256 to 1024x512 bf16, 1 and 2 threads).
//   Without the prefetch, the R interleaved row streams ran 1.5-1.8x slower
//   from DRAM than the one row. For 4 to 8 tokens, against the prefill
//   blocking below: from DRAM 0.83-0.98x, in cache 0.91-1.01x;
// - prefill (more than 8 tokens): matmul_tile() computes 3 rows x T <= 4
//   tokens (12 accumulators, 3 weight registers, one activation register:
//   all 16 ymm registers), rows in L2-sized chunks, token blocks outer, row
//   tiles inner, with the next chunk's weights prefetched line by line over
//   the chunk's work.
// Weights and bf16 activations are widened to f32 in registers, never in
// memory. Columns past the last multiple of 8 are added by a scalar loop.
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

// Software prefetch of the next chunk of weights, a few lines per step, into
// L2 (_MM_HINT_T2): prefetching into L1 instead left prefill with 8 tokens at
// half the speed (the L1 miss buffers fill up; the chunk is L2-sized anyway).
// The decode tiles prefetch into L1 instead (TilePrefetch): a tile is a few
// KB and is read within the next two tiles.
template <bool kToL1>
struct LinePrefetch {
  const char* next = nullptr;  // next line to prefetch
  const char* end = nullptr;   // one past the last byte to prefetch
  int64_t lines_per_step = 0;

  void step() {
    for (int64_t i = 0; i < lines_per_step && next < end; ++i, next += 64) {
      if constexpr (kToL1) {
        _mm_prefetch(next, _MM_HINT_T0);
      } else {
        _mm_prefetch(next, _MM_HINT_T2);
      }
    }
  }
};
using ChunkPrefetch = LinePrefetch<false>;
using TilePrefetch = LinePrefetch<true>;

// sum_{c in [c0, cols)} w[c] x[c], for the columns the vector loop left.
template <class WSource, class XSource>
float scalar_tail(const typename WSource::Elem* w, const typename XSource::Elem* x, int64_t c0,
                  int64_t cols) {
  float sum = 0.0f;
  for (int64_t c = c0; c < cols; ++c) sum += WSource::scalar(w + c) * XSource::scalar(x + c);
  return sum;
}

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

template <class WSource, class XSource, int R, int T, class Prefetch>
void matmul_tile(const TileArgs<WSource, XSource>& a, Prefetch* prefetch) {
  static_assert(R <= 4, "one reduce4 per token");
  const typename WSource::Elem* w_rows[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) w_rows[r] = a.w + (r < a.n_rows ? r : a.n_rows - 1) * a.cols;

  __m256 acc[R][T];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }

  Prefetch pf = *prefetch;
  const int64_t cols_vec = a.cols & ~int64_t{7};
  for (int64_t c = 0; c < cols_vec; c += 8) {
    pf.step();
    __m256 wv[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) wv[r] = WSource::load(w_rows[r] + c);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256 xv = XSource::load(a.x + t * a.cols + c);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  *prefetch = pf;

  const __m256 zero = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    float sums[4];
    _mm_storeu_ps(
        sums, reduce4(acc[0][t], R > 1 ? acc[R > 1 ? 1 : 0][t] : zero,
                      R > 2 ? acc[R > 2 ? 2 : 0][t] : zero, R > 3 ? acc[R > 3 ? 3 : 0][t] : zero));
    const typename XSource::Elem* xt = a.x + t * a.cols;
    for (int64_t r = 0; r < a.n_rows; ++r) {
      a.y[t * a.y_stride + r] =
          sums[r] + scalar_tail<WSource, XSource>(w_rows[r], xt, cols_vec, a.cols);
    }
  }
}

// Up to 8 tokens: tiles of R rows, each computed for tokens [0, TA) and
// then, while its rows are still in L1, for [TA, TA + TB) (TB = 0: none),
// prefetching as the header says. The last tile may hold fewer rows
// (matmul_tile re-reads the last valid row and stores only the valid ones).
template <class WSource, class XSource, int R, int TA, int TB>
void matmul_row_tiles(const MatmulArgs& args, const typename XSource::Elem* x) {
  const auto* w = static_cast<const typename WSource::Elem*>(args.w.data);
  const int64_t cols = args.w.cols;
  const int64_t tile_bytes = R * cols * static_cast<int64_t>(sizeof(typename WSource::Elem));
  const int64_t steps_per_tile = (TB > 0 ? 2 : 1) * (cols / 8) + 1;
  const int64_t lines_per_step = ((tile_bytes + 63) / 64 + steps_per_tile - 1) / steps_per_tile;
  const char* w_end = reinterpret_cast<const char*>(w + args.row_end * cols);
  for (int64_t r = args.row_begin; r < args.row_end; r += R) {
    TilePrefetch prefetch;  // nothing past the range's last row
    if (r + 2 * R < args.row_end) {
      prefetch.next = reinterpret_cast<const char*>(w + (r + 2 * R) * cols);
      prefetch.end =
          prefetch.next + (tile_bytes < w_end - prefetch.next ? tile_bytes : w_end - prefetch.next);
      prefetch.lines_per_step = lines_per_step;
    }
    const int64_t n_rows = args.row_end - r < R ? args.row_end - r : R;
    const TileArgs<WSource, XSource> first{w + r * cols, x,          cols,
                                           n_rows,       args.y + r, args.y_stride};
    matmul_tile<WSource, XSource, R, TA>(first, &prefetch);
    if constexpr (TB > 0) {
      const TileArgs<WSource, XSource> second{
          w + r * cols, x + TA * cols, cols, n_rows, args.y + TA * args.y_stride + r,
          args.y_stride};
      matmul_tile<WSource, XSource, R, TB>(second, &prefetch);
    }
  }
}

template <class WSource, class XSource>
void matmul_blocked(const MatmulArgs& args, const typename XSource::Elem* x) {
  const int64_t n_tokens = args.n_tokens;
  if (n_tokens <= 0 || args.row_end <= args.row_begin) return;
  if (args.w.cols <= 0) {  // empty sums; also keeps the chunk sizing below finite
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t r = args.row_begin; r < args.row_end; ++r) args.y[t * args.y_stride + r] = 0.0f;
    }
    return;
  }
  switch (n_tokens) {
    case 1:
      return matmul_row_tiles<WSource, XSource, 4, 1, 0>(args, x);
    case 2:
      return matmul_row_tiles<WSource, XSource, 4, 2, 0>(args, x);
    case 3:
      return matmul_row_tiles<WSource, XSource, 3, 3, 0>(args, x);
    case 4:
      return matmul_row_tiles<WSource, XSource, 3, 4, 0>(args, x);
    case 5:
      return matmul_row_tiles<WSource, XSource, 3, 3, 2>(args, x);
    case 6:
      return matmul_row_tiles<WSource, XSource, 3, 3, 3>(args, x);
    case 7:
      return matmul_row_tiles<WSource, XSource, 3, 4, 3>(args, x);
    case 8:
      return matmul_row_tiles<WSource, XSource, 3, 4, 4>(args, x);
    default:
      break;
  }

  const auto* w = static_cast<const typename WSource::Elem*>(args.w.data);
  const int64_t cols = args.w.cols;
  constexpr int64_t kRows = 3;
  constexpr int64_t kMaxTokens = 4;
  // Chunks of about 64 KiB of weights (at least one tile): L2-resident while
  // every token block passes over them.
  const int64_t row_bytes = cols * static_cast<int64_t>(sizeof(typename WSource::Elem));
  int64_t chunk_rows = (int64_t{64} << 10) / row_bytes / kRows * kRows;
  chunk_rows = chunk_rows < kRows ? kRows : (chunk_rows > 63 ? 63 : chunk_rows);
  const int64_t n_blocks = (n_tokens + kMaxTokens - 1) / kMaxTokens;
  const int64_t base = n_tokens / n_blocks;
  const int64_t n_big = n_tokens % n_blocks;  // blocks of base + 1 tokens
  const int64_t steps_per_tile = cols / 8 + 1;
  const char* w_end = reinterpret_cast<const char*>(w + args.row_end * cols);

  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += chunk_rows) {
    const int64_t r1 = r0 + chunk_rows < args.row_end ? r0 + chunk_rows : args.row_end;
    const int64_t n_tiles = (r1 - r0 + kRows - 1) / kRows;
    ChunkPrefetch prefetch;
    prefetch.next = reinterpret_cast<const char*>(w + r1 * cols);
    const char* next_end = prefetch.next + chunk_rows * row_bytes;
    prefetch.end = next_end < w_end ? next_end : w_end;
    const int64_t n_lines = (prefetch.end - prefetch.next + 63) / 64;
    const int64_t n_steps = n_blocks * n_tiles * steps_per_tile;
    prefetch.lines_per_step = (n_lines + n_steps - 1) / n_steps;

    int64_t t = 0;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t n_block = base + (b < n_big ? 1 : 0);
      for (int64_t r = r0; r < r1; r += kRows) {
        const TileArgs<WSource, XSource> tile{w + r * cols,
                                              x + t * cols,
                                              cols,
                                              r1 - r < kRows ? r1 - r : kRows,
                                              args.y + t * args.y_stride + r,
                                              args.y_stride};
        // Balanced blocks of at most 4 tokens out of n_tokens >= 4 hold 2 to 4.
        switch (n_block) {
          case 2:
            matmul_tile<WSource, XSource, kRows, 2>(tile, &prefetch);
            break;
          case 3:
            matmul_tile<WSource, XSource, kRows, 3>(tile, &prefetch);
            break;
          default:
            matmul_tile<WSource, XSource, kRows, 4>(tile, &prefetch);
            break;
        }
      }
      t += n_block;
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels::avx2
