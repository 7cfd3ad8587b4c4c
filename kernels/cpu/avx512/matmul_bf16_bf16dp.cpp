// y[t, r] = sum_c x[t, c] W[r, c] with bf16 activations and weights, using
// vdpbf16ps: each f32 lane accumulates the products of one pair of adjacent
// columns, so 32 columns per instruction and no widening at all. f32
// accumulation. Built with -mavx512bf16; used by the avx512bf16 level only.
//
// A matrix interleaved by 16 rows (kernels/interleave.h) is computed the
// other way round: each f32 lane is a ROW, one 64-byte load is a pair of
// columns of 16 rows, and vdpbf16ps with a token's pair of activations
// broadcast advances 16 rows -- no horizontal sums, which with the experts'
// short rows (256 columns in the small preset) were a third of the dot
// kernel's work. The tokens' pairs are first copied into one array per
// block of tokens ([pair][token]), so a step's broadcasts come from one
// cache line: read from the tokens' own rows (a 2 KB stride at 1024
// columns, the same L1 sets), a 4-token GEMM from DRAM ran at 18 instead of
// 26 GB/s; from rows copied 64 bytes apart, 13. Groups outer, token blocks
// inner: a group's 16 rows are read from DRAM once per call.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/matmul_tile.h"
#include "kernels/interleave.h"

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

// Tokens per block of the interleaved kernel: 2T accumulators (two per
// token, even and odd pairs, so that one token's chain of dependent
// vdpbf16ps is two long) and the loads fit the 32 registers.
constexpr int64_t kTokenBlock = 8;
// Tokens transposed and computed per pass over the matrix: bounds the
// per-thread buffer (64 x 2048 pairs x 4 bytes = 512 KB at hidden 4096)
// and keeps it in L2; past 64 tokens a pass is compute-bound, so reading
// the weights once more per 64 tokens costs little.
constexpr int64_t kTokensPerPass = 64;

// From this many tokens a step computes long enough per weight line that
// the hardware prefetcher falls behind: the weights 2 KB ahead are asked
// for (into L1, the lines of the next steps). bench_kernels --only experts,
// Zen 4, interleaved / rows: 8 tokens 0.86x -> 0.99x at 512 x 1024, 16
// tokens 1.09x -> 1.25x at 256 x 256; at 4 tokens and fewer it gained
// nothing (a 4-token step is still memory-bound and the prefetcher keeps up).
constexpr int kPrefetchMinTokens = 8;
constexpr int64_t kPrefetchBytes = 2048;

// One group of 16 rows against T tokens: y[t, 16 rows] for t < T.
//   w: the group's pairs, 64 bytes each; x: [pairs][T] activation pairs.
// Each token's lanes add the same products in the same order whatever T
// is, so a token's result does not depend on the tokens beside it.
template <int T>
void group_rows(const uint16_t* w, int64_t pairs, const uint32_t* x, float* y, int64_t y_stride) {
  __m512 even[T];
  __m512 odd[T];
  for (int t = 0; t < T; ++t) {
    even[t] = _mm512_setzero_ps();
    odd[t] = _mm512_setzero_ps();
  }
  int64_t p = 0;
  for (; p + 2 <= pairs; p += 2) {
    if constexpr (T >= kPrefetchMinTokens) {
      const char* ahead = reinterpret_cast<const char*>(w + p * 32) + kPrefetchBytes;
      _mm_prefetch(ahead, _MM_HINT_T0);
      _mm_prefetch(ahead + 64, _MM_HINT_T0);
    }
    const __m512bh w0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w + p * 32));
    const __m512bh w1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w + p * 32 + 32));
    const uint32_t* xp = x + p * T;
    for (int t = 0; t < T; ++t) {
      even[t] = _mm512_dpbf16_ps(
          even[t], w0, reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xp[t]))));
      odd[t] = _mm512_dpbf16_ps(
          odd[t], w1, reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xp[T + t]))));
    }
  }
  if (p < pairs) {  // an odd number of pairs
    const __m512bh w0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(w + p * 32));
    for (int t = 0; t < T; ++t) {
      even[t] = _mm512_dpbf16_ps(
          even[t], w0,
          reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(x[p * T + t]))));
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y + t * y_stride, _mm512_add_ps(even[t], odd[t]));
}

void group_rows_n(int64_t n, const uint16_t* w, int64_t pairs, const uint32_t* x, float* y,
                  int64_t y_stride) {
  switch (n) {
    case 1:
      return group_rows<1>(w, pairs, x, y, y_stride);
    case 2:
      return group_rows<2>(w, pairs, x, y, y_stride);
    case 3:
      return group_rows<3>(w, pairs, x, y, y_stride);
    case 4:
      return group_rows<4>(w, pairs, x, y, y_stride);
    case 5:
      return group_rows<5>(w, pairs, x, y, y_stride);
    case 6:
      return group_rows<6>(w, pairs, x, y, y_stride);
    case 7:
      return group_rows<7>(w, pairs, x, y, y_stride);
    default:
      return group_rows<8>(w, pairs, x, y, y_stride);
  }
}
static_assert(kTokenBlock == 8, "group_rows_n covers 1-8 tokens");

// out[p * 8 + t] = a[t][p] for 8 tokens' 16 pairs each: an 8 x 16 transpose
// of 32-bit words in registers (unpacks within 128-bit lanes, then lane
// shuffles), 32 ops for 128 words -- the scatter below took a fifth of a
// medium prefill (a slice of a few groups repacks all its tokens).
void transpose_8x16(const __m512i a[8], uint32_t* out) {
  __m512i b[8], c[8];
  for (int i = 0; i < 4; ++i) {
    b[2 * i] = _mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]);
    b[2 * i + 1] = _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]);
  }
  // c[m], c[m + 4]: pair 4L + m of lane L, tokens 0-3 and 4-7.
  for (int h = 0; h < 2; ++h) {
    c[4 * h + 0] = _mm512_unpacklo_epi64(b[4 * h + 0], b[4 * h + 2]);
    c[4 * h + 1] = _mm512_unpackhi_epi64(b[4 * h + 0], b[4 * h + 2]);
    c[4 * h + 2] = _mm512_unpacklo_epi64(b[4 * h + 1], b[4 * h + 3]);
    c[4 * h + 3] = _mm512_unpackhi_epi64(b[4 * h + 1], b[4 * h + 3]);
  }
  auto* o = reinterpret_cast<__m512i*>(out);
  for (int m = 0; m < 2; ++m) {  // pairs 4L + 2m and 4L + 2m + 1
    const __m512i d0 = _mm512_shuffle_i32x4(c[2 * m], c[2 * m + 4], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i d1 = _mm512_shuffle_i32x4(c[2 * m], c[2 * m + 4], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i e0 = _mm512_shuffle_i32x4(c[2 * m + 1], c[2 * m + 5], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i e1 = _mm512_shuffle_i32x4(c[2 * m + 1], c[2 * m + 5], _MM_SHUFFLE(3, 2, 3, 2));
    _mm512_storeu_si512(o + 0 + m, _mm512_shuffle_i32x4(d0, e0, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_si512(o + 2 + m, _mm512_shuffle_i32x4(d0, e0, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm512_storeu_si512(o + 4 + m, _mm512_shuffle_i32x4(d1, e1, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_si512(o + 6 + m, _mm512_shuffle_i32x4(d1, e1, _MM_SHUFFLE(3, 1, 3, 1)));
  }
}

// out[p * n + t] = pair p of token t's row (rows of `pairs` 32-bit pairs).
void transpose_pairs(const uint16_t* x, int64_t n, int64_t pairs, uint32_t* out) {
  if (n == 1) {  // the row as it is
    std::memcpy(out, x, static_cast<size_t>(pairs) * sizeof(uint32_t));
    return;
  }
  int64_t p = 0;
  if (n == 8) {
    __m512i a[8];
    for (; p + 16 <= pairs; p += 16) {
      for (int t = 0; t < 8; ++t) a[t] = _mm512_loadu_si512(x + t * 2 * pairs + 2 * p);
      transpose_8x16(a, out + p * 8);
    }
  }
  // Fewer tokens, and the last pairs: 16 pairs of a token at a time,
  // written n apart.
  const __m512i stride =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(n)));
  for (int64_t t = 0; t < n; ++t) {
    const uint16_t* row = x + t * 2 * pairs;
    int64_t q = p;
    for (; q + 16 <= pairs; q += 16) {
      _mm512_i32scatter_epi32(out + q * n + t, stride, _mm512_loadu_si512(row + 2 * q), 4);
    }
    if (q < pairs) {
      const __mmask16 m = static_cast<__mmask16>((1u << (pairs - q)) - 1);
      _mm512_mask_i32scatter_epi32(out + q * n + t, m, stride,
                                   _mm512_maskz_loadu_epi32(m, row + 2 * q), 4);
    }
  }
}

void matmul_interleaved(const MatmulArgs& args, const uint16_t* x_bf16) {
  const int64_t cols = args.w.cols;
  const int64_t pairs = cols / 2;
  const auto* w = static_cast<const uint16_t*>(args.w.data);
  thread_local std::vector<uint32_t> buffer;
  for (int64_t c0 = 0; c0 < args.n_tokens; c0 += kTokensPerPass) {
    const int64_t n_pass = std::min(kTokensPerPass, args.n_tokens - c0);
    // Block b's pairs at b * kTokenBlock * pairs: [pair][token of the block].
    buffer.resize(static_cast<size_t>(n_pass * pairs));
    for (int64_t t0 = 0; t0 < n_pass; t0 += kTokenBlock) {
      const int64_t n = std::min(kTokenBlock, n_pass - t0);
      transpose_pairs(x_bf16 + (c0 + t0) * cols, n, pairs, buffer.data() + t0 * pairs);
    }
    for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kInterleaveRows) {
      const uint16_t* group = w + r0 * cols;  // a group is 16 rows' bytes
      for (int64_t t0 = 0; t0 < n_pass; t0 += kTokenBlock) {
        group_rows_n(std::min(kTokenBlock, n_pass - t0), group, pairs, buffer.data() + t0 * pairs,
                     args.y + (c0 + t0) * args.y_stride + r0, args.y_stride);
      }
    }
  }
}

}  // namespace

void matmul_bf16(const MatmulArgs& args, const uint16_t* x_bf16) {
  if (args.w.layout == WeightLayout::kInterleaved16) return matmul_interleaved(args, x_bf16);
  avx512::matmul_blocked<Bf16DotKernel>(args, x_bf16);
}

}  // namespace dancemoe::kernels::avx512bf16
