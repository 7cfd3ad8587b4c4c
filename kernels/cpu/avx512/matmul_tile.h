// The matmul driver and micro-kernels shared by every AVX-512 matmul:
// y[t, r] = sum_c x[t, c] W[r, c], W: [rows, cols] row-major, x: [n_tokens, cols].
// The choices below were measured on Zen 4 with weights coming from DRAM
// (tests/bench/bench_kernels.cpp).
//
// Decode (n_tokens <= 3) is memory-bound: matmul_rows() walks W one row at a
// time so DRAM sees a single sequential stream (it runs at the speed of a
// plain streaming read). Interleaving several rows -- the usual register
// blocking -- halved the achieved bandwidth, and software prefetch of the
// stream being read only slowed it down.
//
// Prefill is compute-bound: matmul_tile() computes R = 4 rows x T <= 6
// tokens; per step of K::kStep columns it loads 4 weight vectors (widened to
// f32 in registers, never in memory, or kept as bf16 pairs for vdpbf16ps) and
// T activation vectors, and does 4*T multiply-adds into 4*T accumulators, so
// every weight load serves T tokens and every activation load 4 rows. Rows
// are processed in chunks that fit L2; inside a chunk, token blocks outer
// (their activations stay in L1) and row tiles inner, while the tiles
// prefetch the NEXT chunk's weights one sequential line at a time, spread
// over the chunk's work, so weights arrive from DRAM before they are needed.
//
// Accumulators hold 16 partial sums each; reduce4() folds them per row. The
// column tail is a masked step (masked lanes load as 0).
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

// Software prefetch of the next chunk of weights, a few lines per step, into
// L2 (_MM_HINT_T2): prefetching into L1 instead left prefill with 8 tokens at
// half the speed (the L1 miss buffers fill up; the chunk is L2-sized anyway).
struct ChunkPrefetch {
  const char* next = nullptr;  // next line to prefetch
  const char* end = nullptr;   // one past the last byte of the next chunk
  int64_t lines_per_step = 0;

  void step() {
    for (int64_t i = 0; i < lines_per_step && next < end; ++i, next += 64) {
      _mm_prefetch(next, _MM_HINT_T2);
    }
  }
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
};

template <class K, int R, int T>
void matmul_tile(const TileArgs<K>& a, ChunkPrefetch* prefetch) {
  const typename K::WElem* w_rows[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) w_rows[r] = a.w + (r < a.n_rows ? r : a.n_rows - 1) * a.cols;

  __m512 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }

  ChunkPrefetch pf = *prefetch;
  int64_t c = 0;
  for (; c + K::kStep <= a.cols; c += K::kStep) {
    pf.step();
    typename K::WVec wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) wv[r] = K::load_w(w_rows[r] + c);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const typename K::XVec xv = K::load_x(a.x + t * a.cols + c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = K::madd(acc[r][t], wv[r], xv);
    }
  }
  if (c < a.cols) {
    pf.step();
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
  *prefetch = pf;

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

// Decode: rows one at a time, T tokens, U column steps unrolled so that
// U * T independent accumulators hide the multiply-add latency.
template <class K, int T, int U>
void matmul_rows(const MatmulArgs& args, const typename K::XElem* x) {
  const auto* w = static_cast<const typename K::WElem*>(args.w.data);
  const int64_t cols = args.w.cols;
  for (int64_t r = args.row_begin; r < args.row_end; ++r) {
    const typename K::WElem* wr = w + r * cols;
    __m512 acc[U][T];
#pragma GCC unroll 8
    for (int u = 0; u < U; ++u) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc[u][t] = _mm512_setzero_ps();
    }
    int64_t c = 0;
    for (; c + U * K::kStep <= cols; c += U * K::kStep) {
#pragma GCC unroll 8
      for (int u = 0; u < U; ++u) {
        const typename K::WVec wv = K::load_w(wr + c + u * K::kStep);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          acc[u][t] = K::madd(acc[u][t], wv, K::load_x(x + t * cols + c + u * K::kStep));
        }
      }
    }
    for (; c < cols; c += K::kStep) {
      const int64_t n = cols - c < K::kStep ? cols - c : K::kStep;
      const typename K::WVec wv = K::load_w_tail(wr + c, n);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t)
        acc[0][t] = K::madd(acc[0][t], wv, K::load_x_tail(x + t * cols + c, n));
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      __m512 sum = acc[0][t];
#pragma GCC unroll 8
      for (int u = 1; u < U; ++u) sum = _mm512_add_ps(sum, acc[u][t]);
      args.y[t * args.y_stride + r] = _mm512_reduce_add_ps(sum);
    }
  }
}

// Token blocks are balanced, so with n_tokens >= 4 and at most 6 per block
// every block has 3 to 6 tokens.
template <class K>
void run_tile(int64_t n_tokens, const TileArgs<K>& tile, ChunkPrefetch* prefetch) {
  constexpr int kRows = 4;
  switch (n_tokens) {
    case 3:
      matmul_tile<K, kRows, 3>(tile, prefetch);
      break;
    case 4:
      matmul_tile<K, kRows, 4>(tile, prefetch);
      break;
    case 5:
      matmul_tile<K, kRows, 5>(tile, prefetch);
      break;
    default:
      matmul_tile<K, kRows, 6>(tile, prefetch);
      break;
  }
}

template <class K>
void matmul_blocked(const MatmulArgs& args, const typename K::XElem* x) {
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
      return matmul_rows<K, 1, 4>(args, x);
    case 2:
      return matmul_rows<K, 2, 2>(args, x);
    case 3:
      return matmul_rows<K, 3, 2>(args, x);
    default:
      break;
  }

  const auto* w = static_cast<const typename K::WElem*>(args.w.data);
  const int64_t cols = args.w.cols;
  constexpr int64_t kRows = 4;
  constexpr int64_t kMaxTokens = 6;
  // Chunks of about 64 KiB of weights (at least one tile): L2-resident while
  // every token block passes over them.
  const int64_t row_bytes = cols * static_cast<int64_t>(sizeof(typename K::WElem));
  int64_t chunk_rows = (int64_t{64} << 10) / row_bytes / kRows * kRows;
  chunk_rows = chunk_rows < kRows ? kRows : (chunk_rows > 64 ? 64 : chunk_rows);
  const int64_t n_blocks = (n_tokens + kMaxTokens - 1) / kMaxTokens;
  const int64_t base = n_tokens / n_blocks;
  const int64_t n_big = n_tokens % n_blocks;  // blocks of base + 1 tokens
  const int64_t steps_per_tile = (cols + K::kStep - 1) / K::kStep;
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
        const TileArgs<K> tile{w + r * cols,
                               x + t * cols,
                               cols,
                               r1 - r < kRows ? r1 - r : kRows,
                               args.y + t * args.y_stride + r,
                               args.y_stride};
        run_tile<K>(n_block, tile, &prefetch);
      }
      t += n_block;
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels::avx512
