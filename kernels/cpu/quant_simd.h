// The 256-bit SIMD quantized matmul and activation quantizer, shared by the
// AVX2 level (cpu/avx2/matmul_quant.cpp) and the AVX-512 VNNI level
// (cpu/avx512/matmul_quant_vnni.cpp). The including TU defines
// DMOE_QUANT_SIMD_NS (its level's namespace) and an `Isa` policy:
//
//   struct Isa {
//     // dot_u8s8 is one instruction (vpdpbusd): the Q4_K / Q5_K prefill
//     // then takes rows 8 at a time (matmul_k_grouped)
//     static constexpr bool kOneInstructionDot;
//     // acc + the sums of 4 adjacent u8 x s8 products per int32 lane
//     static __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8);
//     // acc + the sums of 2 adjacent int16 x int16 products per int32 lane
//     static __m256i madd_add(__m256i acc, __m256i a16, __m256i b16);
//   };
//
// (vpmaddubsw + vpmaddwd and vpmaddwd + vpaddd on AVX2; vpdpbusd and
// vpdpwssd with VNNI). Everything else is
// AVX2 + FMA + F16C. 256-bit vectors match one Q8_0 / Q4_0 block and one
// Q4_K chunk; on Zen 4 they also run at the same rate per byte as 512-bit ones.
//
// Math: the scalar reference (cpu/scalar/matmul_quant.cpp) in the same
// integer arithmetic -- every integer block sum is identical, and no step
// can saturate: vpmaddubsw sums two u8 x s8 products into int16, and the
// largest such pair here is 2 x 128 x 127 = 32512 (Q8_0 via |w| and sign(x)),
// 2 x 63 x 127 for Q6_K. Activations are |q| <= 127.
//
// Work order: decode (1-3 tokens) walks rows one at a time with every token
// of the call, so the weights stream once. Prefill takes rows in chunks of
// kRowChunk (a few KB, L1-resident) and, per chunk, every block of up to
// kMaxTokens tokens, so each weight row is unpacked once per token block and
// the tokens' activations come from L2; from kQuadMinTokens tokens Q8_0
// interleaves each chunk's rows in quads first (matmul_q8_0_quads) and Q4_K /
// Q5_K unpack them once (matmul_k_unpacked; with VNNI, matmul_k_grouped).
//
// Internal linkage only (anonymous namespace): see cpu/numeric.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/mxfp4_simd.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/interleave.h"
#include "kernels/quant_format.h"

#ifndef DMOE_QUANT_SIMD_NS
#error "define DMOE_QUANT_SIMD_NS before including quant_simd.h"
#endif

namespace dancemoe::kernels::DMOE_QUANT_SIMD_NS {
namespace {

constexpr int kMaxTokens = 4;
constexpr int64_t kRowChunk = 16;

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// The lane totals of four vectors, [sum a, sum b, sum c, sum d]. Each total
// is formed in the same order whatever the other three hold.
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 ab = _mm256_hadd_ps(a, b);
  const __m256 cd = _mm256_hadd_ps(c, d);
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // per 128-bit half: a, b, c, d partial totals
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// Rows [r0, r0 + n_rows) against tokens [t0, t0 + T): row_sums(r, out)
// writes row r's vector of partial sums per token (its lanes add up to the
// row's result). The rows' sums are reduced four rows at a time (hsum4)
// instead of each row on its own (a chain of ~10 dependent adds and
// shuffles ending every row): bench_quant_kernels GEMV in cache, one thread,
// Zen 4, interleaved twice: Q4_K / Q5_K 1.04-1.06x at the AVX-512 levels,
// Q8_0 / Q6_K unchanged. Every row kernel ends here, so a row's result does
// not depend on the path (decode, prefill, unpacked) that computed it.
template <int T, class RowSums>
void store_rows(const MatmulArgs& args, int64_t t0, int64_t r0, int64_t n_rows,
                RowSums&& row_sums) {
  for (int64_t r = 0; r < n_rows; r += 4) {
    const int64_t n = n_rows - r < 4 ? n_rows - r : 4;
    __m256 sums[4][T];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      for (int t = 0; t < T; ++t) sums[q][t] = _mm256_setzero_ps();
      if (q < n) row_sums(r0 + r + q, sums[q]);
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m128 v = hsum4(sums[0][t], sums[1][t], sums[2][t], sums[3][t]);
      float* y = args.y + (t0 + t) * args.y_stride + r0 + r;
      if (n == 4) {
        _mm_storeu_ps(y, v);
      } else {
        alignas(16) float lanes[4];
        _mm_store_ps(lanes, v);
        for (int64_t q = 0; q < n; ++q) y[q] = lanes[q];
      }
    }
  }
}

// A vector whose int32 lanes add up to v (lane 0 = v, others 0).
inline __m256i lane0(int v) { return _mm256_zextsi128_si256(_mm_cvtsi32_si128(v)); }

// The T token rows of one call, decoded once.
template <int T>
struct Tokens {
  QuantizedXRow x[T];
  const int16_t* sub[T] = {};  // Q4_K / Q5_K: XRows::sub_sums of each token
};

// Every token row of one call: row 0 split into its arrays once, and row t
// the same arrays t rows further (quantized_x_row per token block and row
// chunk was ~2 % of a prefill).
struct XRows {
  QuantizedXRow first;
  int64_t row_bytes = 0;

  XRows(WeightType type, const void* x_q, int64_t cols)
      : first(quantized_x_row(type, x_q, cols, 0)), row_bytes(quantized_x_row_bytes(type, cols)) {}

  template <class P>
  P* shift(P* p, int64_t t) const {
    if (p == nullptr) return p;
    return reinterpret_cast<P*>(reinterpret_cast<const uint8_t*>(p) + t * row_bytes);
  }
  QuantizedXRow operator[](int64_t t) const {
    return QuantizedXRow{shift(first.q, t), shift(first.q16, t), shift(first.d, t),
                         shift(first.sums, t)};
  }

  // Q4_K / Q5_K: token t's sums over each sub-block, 8 int16 per super-block
  // (k_sub_sums), formed once per call by matmul_quant_impl instead of once
  // per row and token block; null for other formats.
  const int16_t* subs = nullptr;
  int64_t subs_per_token = 0;
  const int16_t* sub_sums(int64_t t) const {
    return subs == nullptr ? nullptr : subs + t * subs_per_token;
  }

  template <int T>
  Tokens<T> tokens(int64_t t0) const {
    Tokens<T> tok;
    for (int t = 0; t < T; ++t) {
      tok.x[t] = (*this)[t0 + t];
      tok.sub[t] = sub_sums(t0 + t);
    }
    return tok;
  }
};

// Every block of up to kMaxTokens tokens of a call, in order: calls
// fn.template operator()<T>(t0) with T the block's token count.
template <class Fn>
void for_token_blocks(int64_t n_tokens, Fn&& fn) {
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kMaxTokens) {
    switch (n_tokens - t0 < kMaxTokens ? n_tokens - t0 : kMaxTokens) {
      case 1:
        fn.template operator()<1>(t0);
        break;
      case 2:
        fn.template operator()<2>(t0);
        break;
      case 3:
        fn.template operator()<3>(t0);
        break;
      default:
        fn.template operator()<4>(t0);
    }
  }
}

// ---- Q8_0 against 16-bit activations (quant_format.h): the weights widened
// to int16, two int16 dot products per 32-block, scaled by the block's d;
// each group of (up to) 8 blocks shares the activation scale dx, applied
// once per group: y += dx sum_blocks(d sum(w x)).
template <class Isa, int T>
void row_q8_0(const uint8_t* w, int64_t cols, const Tokens<T>& tok, __m256* out) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  constexpr int64_t kGroupBlocks = kQKK / kQK;
  const int64_t n_blocks = cols / kQK;
  const uint8_t* blk = w;
  const int16_t* x[T];
  for (int t = 0; t < T; ++t) x[t] = tok.x[t].q16;
  int64_t off = 0;  // of the current block in x
  for (int64_t g0 = 0; g0 < n_blocks; g0 += kGroupBlocks) {
    const uint8_t* group_end =
        blk + (g0 + kGroupBlocks < n_blocks ? kGroupBlocks : n_blocks - g0) * sizeof(BlockQ8_0);
    __m256 group[T];
    for (int t = 0; t < T; ++t) group[t] = _mm256_setzero_ps();
    for (; blk < group_end; blk += sizeof(BlockQ8_0)) {
      const __m256i w0 =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
      const __m256i w1 =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18)));
      const __m256 d = _mm256_cvtph_ps(_mm_broadcastw_epi16(_mm_loadu_si16(blk)));
      for (int t = 0; t < T; ++t) {
        const __m256i p =
            Isa::madd_add(_mm256_madd_epi16(w0, load256(x[t] + off)), w1, load256(x[t] + off + 16));
        group[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, group[t]);
      }
      off += kQK;
    }
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm256_fmadd_ps(group[t], _mm256_set1_ps(tok.x[t].d[g0 / kGroupBlocks]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = acc[t];
}

// ---- Q8_0 at prefill (kQuadMinTokens tokens or more): rows in quads.
// row_q8_0 converts and scales one vector per row, block and token, and on
// AVX2 vpmaddwd, vcvtdq2ps and vfmadd share two pipes: per 32 products two
// multiply-adds, one conversion and one FMA. Here the int16 weights of four
// rows are interleaved in 64-bit pieces (row q's values 4k..4k+3 in lanes
// 4q..4q+3 of vector k), so one vpmaddwd against x's four values broadcast
// covers four rows, and one conversion and FMA per block and token serve all
// four (int32 lanes 2q and 2q+1 are row q's; their sum is its block sum). The
// interleaving is done per chunk of rows and reused by every token block.
// bench_quant_kernels GEMM, one thread (Zen 3, old/new interleaved twice):
// 32 tokens 1.25-1.55x row_q8_0's GMAC/s, 128 tokens 1.55-1.95x; `dancemoe
// bench` Q8_0 medium prefill 1.40-1.51x. A microbenchmark put the packing's
// break-even near 8 tokens, hence kQuadMinTokens.
constexpr int64_t kQuadMinTokens = 16;

// One block (32 values) of a quad of rows: w[k] holds values 4k..4k+3 of
// rows 0..3 as int16, d the rows' scales as [d0, d0, d1, d1, d2, d2, d3, d3].
struct alignas(32) Q8_0Quad {
  int16_t w[8][16];
  float d[8];
};

// Quads [0, n_quads) of the rows at `w` (row q of quad g at w + (4g + q) *
// row_bytes); rows at or past n_rows repeat row n_rows - 1 (their results
// are computed and dropped, so that every row meets the same arithmetic
// whatever quad it lands in).
inline void pack_q8_0_quads(const uint8_t* w, int64_t row_bytes, int64_t n_rows, int64_t n_blocks,
                            Q8_0Quad* out) {
  const int64_t n_quads = (n_rows + 3) / 4;
  for (int64_t g = 0; g < n_quads; ++g) {
    const uint8_t* row[4];
    for (int q = 0; q < 4; ++q) {
      const int64_t r = 4 * g + q < n_rows ? 4 * g + q : n_rows - 1;
      row[q] = w + r * row_bytes;
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      Q8_0Quad& quad = out[g * n_blocks + b];
      const int64_t at = b * static_cast<int64_t>(sizeof(BlockQ8_0));
      for (int h = 0; h < 2; ++h) {
        __m256i v[4];  // values 16h..16h+15 of each row as int16
        for (int q = 0; q < 4; ++q) {
          v[q] = _mm256_cvtepi8_epi16(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[q] + at + 2 + 16 * h)));
        }
        // A 4 x 4 transpose of 64-bit pieces.
        const __m256i t0 = _mm256_unpacklo_epi64(v[0], v[1]);
        const __m256i t1 = _mm256_unpackhi_epi64(v[0], v[1]);
        const __m256i t2 = _mm256_unpacklo_epi64(v[2], v[3]);
        const __m256i t3 = _mm256_unpackhi_epi64(v[2], v[3]);
        auto* dst = reinterpret_cast<__m256i*>(quad.w[4 * h]);
        _mm256_store_si256(dst + 0, _mm256_permute2x128_si256(t0, t2, 0x20));
        _mm256_store_si256(dst + 1, _mm256_permute2x128_si256(t1, t3, 0x20));
        _mm256_store_si256(dst + 2, _mm256_permute2x128_si256(t0, t2, 0x31));
        _mm256_store_si256(dst + 3, _mm256_permute2x128_si256(t1, t3, 0x31));
      }
      for (int q = 0; q < 4; ++q) quad.d[2 * q] = quad.d[2 * q + 1] = load_f16(row[q] + at);
    }
  }
}

inline __m256i broadcast_4x16(const int16_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi64x(v);
}

// One quad (n_blocks blocks) against T tokens: out[q * T + t].
template <class Isa, int T>
void quad_q8_0(const Q8_0Quad* quad, int64_t n_blocks, const Tokens<T>& tok, float* out) {
  constexpr int64_t kGroupBlocks = kQKK / kQK;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t g0 = 0; g0 < n_blocks; g0 += kGroupBlocks) {
    const int64_t g1 = g0 + kGroupBlocks < n_blocks ? g0 + kGroupBlocks : n_blocks;
    __m256 group[T];
    for (int t = 0; t < T; ++t) group[t] = _mm256_setzero_ps();
    for (int64_t b = g0; b < g1; ++b) {
      // Unrolled whole (GCC at -O2 kept w on the stack and the loops rolled).
      __m256i w[8];
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        w[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(quad[b].w[k]));
      }
      const __m256 d = _mm256_load_ps(quad[b].d);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const int16_t* x = tok.x[t].q16 + b * kQK;
        // Two chains of four: shorter dependencies.
        __m256i s0 = _mm256_madd_epi16(w[0], broadcast_4x16(x));
        __m256i s1 = _mm256_madd_epi16(w[1], broadcast_4x16(x + 4));
        s0 = Isa::madd_add(s0, w[2], broadcast_4x16(x + 8));
        s1 = Isa::madd_add(s1, w[3], broadcast_4x16(x + 12));
        s0 = Isa::madd_add(s0, w[4], broadcast_4x16(x + 16));
        s1 = Isa::madd_add(s1, w[5], broadcast_4x16(x + 20));
        s0 = Isa::madd_add(s0, w[6], broadcast_4x16(x + 24));
        s1 = Isa::madd_add(s1, w[7], broadcast_4x16(x + 28));
        group[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s0, s1)), d, group[t]);
      }
    }
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm256_fmadd_ps(group[t], _mm256_set1_ps(tok.x[t].d[g0 / kGroupBlocks]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[t]);
    for (int q = 0; q < 4; ++q) out[q * T + t] = lanes[2 * q] + lanes[2 * q + 1];
  }
}

// Rows [r0, r0 + n_rows) from `packed` (their quads) against tokens [t0, t0 + T).
template <class Isa, int T>
void quads_tokens(const MatmulArgs& args, const XRows& x, const Q8_0Quad* packed, int64_t t0,
                  int64_t r0, int64_t n_rows) {
  const Tokens<T> tok = x.tokens<T>(t0);
  const int64_t n_blocks = args.w.cols / kQK;
  for (int64_t g = 0; 4 * g < n_rows; ++g) {
    float out[4 * T];
    quad_q8_0<Isa, T>(packed + g * n_blocks, n_blocks, tok, out);
    const int64_t rows = n_rows - 4 * g < 4 ? n_rows - 4 * g : 4;
    for (int64_t q = 0; q < rows; ++q) {
      for (int t = 0; t < T; ++t)
        args.y[(t0 + t) * args.y_stride + r0 + 4 * g + q] = out[q * T + t];
    }
  }
}

template <class Isa>
void matmul_q8_0_quads(const MatmulArgs& args, const XRows& x) {
  const WeightView& w = args.w;
  const int64_t n_blocks = w.cols / kQK;
  const int64_t row_bytes = weight_row_bytes(w.type, w.cols);
  thread_local std::vector<Q8_0Quad> packed;
  packed.resize(static_cast<size_t>(kRowChunk / 4 * n_blocks));
  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kRowChunk) {
    const int64_t n_rows = args.row_end - r0 < kRowChunk ? args.row_end - r0 : kRowChunk;
    pack_q8_0_quads(static_cast<const uint8_t*>(w.data) + r0 * row_bytes, row_bytes, n_rows,
                    n_blocks, packed.data());
    for_token_blocks(args.n_tokens, [&]<int T>(int64_t t0) {
      quads_tokens<Isa, T>(args, x, packed.data(), t0, r0, n_rows);
    });
  }
}

// ---- Q4_0: levels 0..15 against x, minus 8 sum(x) in the same int32 sum.
template <class Isa, int T>
void row_q4_0(const uint8_t* w, int64_t cols, const Tokens<T>& tok, __m256* out) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const int64_t n_blocks = cols / kQK;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * static_cast<int64_t>(sizeof(BlockQ4_0));
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    const __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), m4);
    uint16_t dbits;
    std::memcpy(&dbits, blk, 2);
    const float d = _cvtsh_ss(dbits);
    for (int t = 0; t < T; ++t) {
      const int offset = 8 * (tok.x[t].sums[2 * b] + tok.x[t].sums[2 * b + 1]);
      const __m256i p = Isa::dot_u8s8(_mm256_setzero_si256(), q, load256(tok.x[t].q + b * kQK));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(p, lane0(offset))),
                               _mm256_set1_ps(d * tok.x[t].d[b]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = acc[t];
}

// The 8 six-bit scales and mins of a Q4_K / Q5_K super-block as bytes
// [sc0..sc7, m0..m7] (quant_blocks.h, k_scale_min), in ten vector ops:
// bytes b0..b11 are arranged as a = [b0-3, b8-11, b4-7, b8-11] and
// top = [0, b0-3, 0, b4-7]; then sc0-3 = a & 63, sc4-7 = (a & 15) | top's
// bits 6-7 moved to 4-5, m0-3 = a & 63, m4-7 = a >> 4 | the same. The
// 16-bit shifts leak bits across bytes only into bits the masks clear.
// Reads 16 bytes from `scales` (the 12 scale bytes and 4 of what follows in
// the block).
inline __m128i k_scales_mins(const uint8_t* scales) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales));
  const __m128i a =
      _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m128i top =
      _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
  const __m128i low =
      _mm_and_si128(a, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
  const __m128i high_nibbles = _mm_and_si128(
      _mm_srli_epi16(a, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
  const __m128i top2 = _mm_and_si128(_mm_srli_epi16(top, 2), _mm_set1_epi8(0x30));
  return _mm_or_si128(_mm_or_si128(low, high_nibbles), top2);
}

// vpshufb masks: int16 lane value = int16 j of each 128-bit half (j < 8).
inline __m256i broadcast_int16(__m256i both_halves, int j) {
  const __m256i mask = _mm256_set1_epi16(static_cast<int16_t>((2 * j) | ((2 * j + 1) << 8)));
  return _mm256_shuffle_epi8(both_halves, mask);
}

// ---- Q4_K / Q5_K (kFifthBit): per chunk c of 32 bytes, low nibbles are
// sub-block 2c, high nibbles 2c + 1; each run of 32 products is scaled by its
// 6-bit scale in Isa::madd_add. Mins: m_j x the activation's sums over
// sub-block j (pairs of run sums). Per super-block and token the two integer
// results meet their float scales in one vector: lanes 0-3 the main sum
// (d dx), lanes 4-7 minus the min sum (dmin dx), so one conversion and one
// multiply-add per super-block.

// A super-block's scales: d in lanes 0-3 and dmin in 4-7 (its two leading
// f16 values); the 8 six-bit scales as int16 in both 128-bit halves; minus
// the 8 mins as int16.
struct KScales {
  __m256 d_dmin;
  __m256i sc_both;
  __m128i neg_mins16;
};

inline KScales k_block_scales(const uint8_t* blk) {
  uint32_t dbits;
  std::memcpy(&dbits, blk, 4);
  const __m128i sm = k_scales_mins(blk + 4);
  return KScales{
      _mm256_permutevar8x32_ps(
          _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dbits)))),
          _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1)),
      _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm)),
      _mm_sub_epi16(_mm_setzero_si128(), _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)))};
}

// Chunk c of a super-block as levels: *lo sub-block 2c, *hi 2c + 1 (with
// the fifth bits of qh for Q5_K).
template <bool kFifthBit>
inline void k_chunk_levels(const uint8_t* qs, __m256i qh, int c, __m256i* lo, __m256i* hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i q = load256(qs + 32 * c);
  *lo = _mm256_and_si256(q, m4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
  if constexpr (kFifthBit) {
    // Bit 2c of qh[k] is value k's fifth bit in sub-block 2c, bit 2c+1 in 2c+1.
    const __m256i bit = _mm256_set1_epi8(0x01);
    *lo = _mm256_or_si256(
        *lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), bit), 4));
    *hi = _mm256_or_si256(
        *hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), bit), 4));
  }
}

// The activation's sums over each sub-block of super-block b: pairs of its
// 16 run sums.
inline __m128i k_sub_sums(const int16_t* runs16) {
  const __m256i runs = load256(runs16);
  return _mm_hadd_epi16(_mm256_castsi256_si128(runs), _mm256_extracti128_si256(runs, 1));
}

// acc + one super-block of one token: its two integer accumulators (low and
// high nibbles), the activation's sub-block sums (k_sub_sums) and scale dx.
inline __m256 k_block_finish(__m256i isum, __m256i isum_hi, __m128i sub, float dx,
                             const __m128i neg_mins16, const __m256 d_dmin, __m256 acc) {
  const __m256i sum8 = _mm256_add_epi32(isum, isum_hi);
  const __m128i sum4 =
      _mm_add_epi32(_mm256_castsi256_si128(sum8), _mm256_extracti128_si256(sum8, 1));
  const __m256i both =
      _mm256_inserti128_si256(_mm256_castsi128_si256(sum4), _mm_madd_epi16(sub, neg_mins16), 1);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(both), _mm256_mul_ps(d_dmin, _mm256_set1_ps(dx)), acc);
}

template <class Isa, int T, bool kFifthBit>
void row_k_4_5(const uint8_t* w, int64_t cols, const Tokens<T>& tok, __m256* out) {
  constexpr int64_t kBlockBytes = kFifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  constexpr int64_t kQsOffset = kFifthBit ? 16 + 32 : 16;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const int64_t n_blocks = cols / kQKK;
  const uint8_t* blk = w;
  for (int64_t b = 0; b < n_blocks; ++b, blk += kBlockBytes) {
    const KScales s = k_block_scales(blk);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFifthBit) qh = load256(blk + 16);
    // Two accumulators per token (low / high nibbles) halve the chain of
    // dependent multiply-adds, which otherwise bounds the decode speed.
    __m256i isum[T], isum_hi[T];
    for (int t = 0; t < T; ++t) isum[t] = isum_hi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m256i lo, hi;
      k_chunk_levels<kFifthBit>(blk + kQsOffset, qh, c, &lo, &hi);
      const __m256i s_lo = broadcast_int16(s.sc_both, 2 * c);
      const __m256i s_hi = broadcast_int16(s.sc_both, 2 * c + 1);
      // Sub-blocks 2c and 2c + 1 in the interleaved activation order.
      const int64_t x_lo = q_offset(WeightType::kQ4_K, 64 * c);
      const int64_t x_hi = q_offset(WeightType::kQ4_K, 64 * c + 32);
      for (int t = 0; t < T; ++t) {
        const int8_t* x = tok.x[t].q + b * kQKK;
        isum[t] = Isa::madd_add(isum[t], _mm256_maddubs_epi16(lo, load256(x + x_lo)), s_lo);
        isum_hi[t] = Isa::madd_add(isum_hi[t], _mm256_maddubs_epi16(hi, load256(x + x_hi)), s_hi);
      }
    }
    for (int t = 0; t < T; ++t) {
      acc[t] = k_block_finish(isum[t], isum_hi[t],
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(tok.sub[t] + 8 * b)),
                              tok.x[t].d[b], s.neg_mins16, s.d_dmin, acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = acc[t];
}

// ---- Q4_K / Q5_K at prefill (kQuadMinTokens tokens or more): row_k_4_5
// unpacks every super-block's levels and scales again for each block of 4
// tokens, ~35 of the ~70 vector ops per super-block and token block. Here
// each chunk of rows is unpacked once into KUnpacked blocks, and every token
// block reads levels and scale vectors as they are. The arithmetic per row,
// block and token is row_k_4_5's, in the same order: the same results.
struct alignas(32) KUnpacked {
  uint8_t levels[8][32];  // sub-block 2c (low nibbles) then 2c + 1, per chunk c
  int16_t scale[8][16];   // sub-block j's scale in every lane
  float d_dmin[8];
  int16_t neg_mins[8];
};

template <bool kFifthBit>
inline void unpack_k_rows(const uint8_t* w, int64_t row_bytes, int64_t n_rows, int64_t n_blocks,
                          KUnpacked* out) {
  constexpr int64_t kBlockBytes = kFifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  constexpr int64_t kQsOffset = kFifthBit ? 16 + 32 : 16;
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blk = w + r * row_bytes + b * kBlockBytes;
      KUnpacked& u = out[r * n_blocks + b];
      const KScales s = k_block_scales(blk);
      _mm256_store_ps(u.d_dmin, s.d_dmin);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(u.neg_mins), s.neg_mins16);
      __m256i qh = _mm256_setzero_si256();
      if constexpr (kFifthBit) qh = load256(blk + 16);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        __m256i lo, hi;
        k_chunk_levels<kFifthBit>(blk + kQsOffset, qh, c, &lo, &hi);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.levels[2 * c]), lo);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.levels[2 * c + 1]), hi);
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.scale[2 * c]),
                           broadcast_int16(s.sc_both, 2 * c));
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.scale[2 * c + 1]),
                           broadcast_int16(s.sc_both, 2 * c + 1));
      }
    }
  }
}

template <class Isa, int T>
void row_k_unpacked(const KUnpacked* blocks, int64_t n_blocks, const Tokens<T>& tok, __m256* out) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const KUnpacked& u = blocks[b];
    __m256i isum[T], isum_hi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) isum[t] = isum_hi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.levels[2 * c]));
      const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.levels[2 * c + 1]));
      const __m256i s_lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.scale[2 * c]));
      const __m256i s_hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.scale[2 * c + 1]));
      const int64_t x_lo = q_offset(WeightType::kQ4_K, 64 * c);
      const int64_t x_hi = q_offset(WeightType::kQ4_K, 64 * c + 32);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const int8_t* x = tok.x[t].q + b * kQKK;
        isum[t] = Isa::madd_add(isum[t], _mm256_maddubs_epi16(lo, load256(x + x_lo)), s_lo);
        isum_hi[t] = Isa::madd_add(isum_hi[t], _mm256_maddubs_epi16(hi, load256(x + x_hi)), s_hi);
      }
    }
    const __m128i neg_mins16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u.neg_mins));
    const __m256 d_dmin = _mm256_load_ps(u.d_dmin);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      acc[t] = k_block_finish(isum[t], isum_hi[t],
                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(tok.sub[t] + 8 * b)),
                              tok.x[t].d[b], neg_mins16, d_dmin, acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = acc[t];
}

template <class Isa, int T>
void unpacked_rows_tokens(const MatmulArgs& args, const XRows& x, const KUnpacked* rows, int64_t t0,
                          int64_t r0, int64_t n_rows) {
  const Tokens<T> tok = x.tokens<T>(t0);
  const int64_t n_blocks = args.w.cols / kQKK;
  store_rows<T>(args, t0, r0, n_rows, [&](int64_t r, __m256* out) {
    row_k_unpacked<Isa, T>(rows + (r - r0) * n_blocks, n_blocks, tok, out);
  });
}

template <class Isa>
void matmul_k_unpacked(const MatmulArgs& args, const XRows& x) {
  const WeightView& w = args.w;
  const int64_t n_blocks = w.cols / kQKK;
  const int64_t row_bytes = weight_row_bytes(w.type, w.cols);
  thread_local std::vector<KUnpacked> unpacked;
  unpacked.resize(static_cast<size_t>(kRowChunk * n_blocks));
  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kRowChunk) {
    const int64_t n_rows = args.row_end - r0 < kRowChunk ? args.row_end - r0 : kRowChunk;
    const uint8_t* rows = static_cast<const uint8_t*>(w.data) + r0 * row_bytes;
    if (w.type == WeightType::kQ5_K) {
      unpack_k_rows<true>(rows, row_bytes, n_rows, n_blocks, unpacked.data());
    } else {
      unpack_k_rows<false>(rows, row_bytes, n_rows, n_blocks, unpacked.data());
    }
    for_token_blocks(args.n_tokens, [&]<int T>(int64_t t0) {
      unpacked_rows_tokens<Isa, T>(args, x, unpacked.data(), t0, r0, n_rows);
    });
  }
}

// ---- Q4_K / Q5_K at prefill, rows interleaved by 8 (matmul_k_grouped):
// each chunk's rows are unpacked once into groups of 8 rows whose levels
// are transposed so that one 256-bit vector holds the same 4 positions of
// a sub-block in 8 rows (KGroupBlock). Then one u8 x s8 dot product against
// 4 activation bytes broadcast to every lane advances 8 rows at once: a
// sub-block is 8 of them per token, its scale one vpmulld for 8 rows, the
// mins one vpmaddwd per pair of sub-blocks, and the lanes ARE the rows --
// no horizontal sums. Integer sums are exact in any order; the float steps
// differ from the row kernels' (one conversion per super-block instead of
// one per lane), so the results agree with them to float rounding.
constexpr int kGroupRows = 8;

struct alignas(32) KGroupBlock {  // one super-block of 8 rows
  uint8_t levels[8][8][32];       // [sub-block j][quad k][4 r + i]: level 4k + i of row r
  int32_t scale[8][8];            // [j][r]
  int16_t mins[4][16];            // [pair p][2r + e]: min of sub-block 2p + e of row r
  float d[8];
  float dmin[8];
};

// v[k] <- (v[0][k], ..., v[7][k]): the 8x8 transpose of 32-bit elements.
inline void transpose8x32(__m256i v[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // rows 0-3, then 4-7
    u[4 * h + 0] = _mm256_unpacklo_epi64(t[4 * h], t[4 * h + 2]);
    u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h], t[4 * h + 2]);
    u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
    u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x20);
    v[k + 4] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x31);
  }
}

// Rows [0, n_rows) (n_rows <= 8; missing rows repeat the last) of w, every
// super-block, into out[0, n_blocks).
template <bool kFifthBit>
void unpack_k_group(const uint8_t* w, int64_t row_bytes, int64_t n_rows, int64_t n_blocks,
                    KGroupBlock* out) {
  constexpr int64_t kBlockBytes = kFifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  constexpr int64_t kQsOffset = kFifthBit ? 16 + 32 : 16;
  for (int64_t b = 0; b < n_blocks; ++b) {
    KGroupBlock& g = out[b];
    alignas(32) uint8_t levels[kGroupRows][kQKK];  // per row, sub-block j at 32 j
    for (int r = 0; r < kGroupRows; ++r) {
      const uint8_t* blk = w + (r < n_rows ? r : n_rows - 1) * row_bytes + b * kBlockBytes;
      g.d[r] = load_f16(blk);
      g.dmin[r] = load_f16(blk + 2);
      alignas(16) uint8_t sm[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(sm), k_scales_mins(blk + 4));
      for (int j = 0; j < 8; ++j) {
        g.scale[j][r] = sm[j];
        g.mins[j / 2][2 * r + (j & 1)] = sm[8 + j];
      }
      __m256i qh = _mm256_setzero_si256();
      if constexpr (kFifthBit) qh = load256(blk + 16);
      for (int c = 0; c < 4; ++c) {
        __m256i lo, hi;
        k_chunk_levels<kFifthBit>(blk + kQsOffset, qh, c, &lo, &hi);
        _mm256_store_si256(reinterpret_cast<__m256i*>(levels[r] + 64 * c), lo);
        _mm256_store_si256(reinterpret_cast<__m256i*>(levels[r] + 64 * c + 32), hi);
      }
    }
    for (int j = 0; j < 8; ++j) {
      __m256i v[kGroupRows];
      for (int r = 0; r < kGroupRows; ++r) {
        v[r] = _mm256_load_si256(reinterpret_cast<const __m256i*>(levels[r] + 32 * j));
      }
      transpose8x32(v);
      for (int k = 0; k < 8; ++k) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(g.levels[j][k]), v[k]);
      }
    }
  }
}

// The 4 bytes at p in every 32-bit lane.
inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// One group of 8 rows against tokens [t0, t0 + T): out[t] lane r = row r.
template <class Isa, int T>
void k_group_rows(const KGroupBlock* blocks, int64_t n_blocks, const Tokens<T>& tok, __m256* out) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const KGroupBlock& g = blocks[b];
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      // Sub-block j's 32 activations, contiguous in the interleaved order.
      const int64_t xo = b * kQKK + q_offset(WeightType::kQ4_K, 32 * j);
      __m256i sj[T];
      for (int t = 0; t < T; ++t) sj[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const __m256i lv = _mm256_load_si256(reinterpret_cast<const __m256i*>(g.levels[j][k]));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          sj[t] = Isa::dot_u8s8(sj[t], lv, broadcast4(tok.x[t].q + xo + 4 * k));
        }
      }
      const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(g.scale[j]));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t)
        isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(sj[t], sc));
    }
    __m256i msum[T];
    for (int t = 0; t < T; ++t) msum[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i mv = _mm256_load_si256(reinterpret_cast<const __m256i*>(g.mins[p]));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        msum[t] = _mm256_add_epi32(msum[t],
                                   _mm256_madd_epi16(mv, broadcast4(tok.sub[t] + 8 * b + 2 * p)));
      }
    }
    const __m256 d = _mm256_load_ps(g.d);
    const __m256 dmin = _mm256_load_ps(g.dmin);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256 dx = _mm256_set1_ps(tok.x[t].d[b]);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, dx), acc[t]);
      acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum[t]), _mm256_mul_ps(dmin, dx), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = acc[t];
}

template <class Isa>
void matmul_k_grouped(const MatmulArgs& args, const XRows& x) {
  const WeightView& w = args.w;
  const int64_t n_blocks = w.cols / kQKK;
  const int64_t row_bytes = weight_row_bytes(w.type, w.cols);
  constexpr int64_t kGroups = kRowChunk / kGroupRows;
  thread_local std::vector<KGroupBlock> groups;
  groups.resize(static_cast<size_t>(kGroups * n_blocks));
  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kRowChunk) {
    const int64_t n_rows = args.row_end - r0 < kRowChunk ? args.row_end - r0 : kRowChunk;
    const int64_t n_groups = (n_rows + kGroupRows - 1) / kGroupRows;
    for (int64_t gi = 0; gi < n_groups; ++gi) {
      const uint8_t* rows =
          static_cast<const uint8_t*>(w.data) + (r0 + gi * kGroupRows) * row_bytes;
      const int64_t n =
          n_rows - gi * kGroupRows < kGroupRows ? n_rows - gi * kGroupRows : kGroupRows;
      if (w.type == WeightType::kQ5_K) {
        unpack_k_group<true>(rows, row_bytes, n, n_blocks, groups.data() + gi * n_blocks);
      } else {
        unpack_k_group<false>(rows, row_bytes, n, n_blocks, groups.data() + gi * n_blocks);
      }
    }
    for_token_blocks(args.n_tokens, [&]<int T>(int64_t t0) {
      const Tokens<T> tok = x.tokens<T>(t0);
      for (int64_t gi = 0; gi < n_groups; ++gi) {
        __m256 out[T];
        k_group_rows<Isa, T>(groups.data() + gi * n_blocks, n_blocks, tok, out);
        const int64_t row0 = r0 + gi * kGroupRows;
        const int64_t n =
            n_rows - gi * kGroupRows < kGroupRows ? n_rows - gi * kGroupRows : kGroupRows;
        for (int t = 0; t < T; ++t) {
          float* y = args.y + (t0 + t) * args.y_stride + row0;
          if (n == kGroupRows) {
            _mm256_storeu_ps(y, out[t]);
          } else {
            alignas(32) float lanes[kGroupRows];
            _mm256_store_ps(lanes, out[t]);
            for (int64_t r = 0; r < n; ++r) y[r] = lanes[r];
          }
        }
      }
    });
  }
}

// ---- Q6_K: per half of 128 values, four groups of 32 (levels 0..63) whose
// two runs of 16 have their own int8 scales; the -32 offset is folded in as
// -32 sum_k sc_k sum_k(x), one more Isa::madd_add per super-block.
template <class Isa, int T>
void row_q6_k(const uint8_t* w, int64_t cols, const Tokens<T>& tok, __m256* out) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  // vpshufb masks of group s: int16 lanes 0-7 take run 2s's scale, lanes
  // 8-15 run 2s + 1's. Built once here: inside the loop a mask depending on
  // s was assembled byte by byte whenever the loop was not unrolled.
  __m256i scale_mask[4];
#pragma GCC unroll 4
  for (int s = 0; s < 4; ++s) {
    const char a = static_cast<char>(4 * s);
    scale_mask[s] =
        _mm256_setr_epi8(a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a, a + 1, a,
                         a + 1, a + 2, a + 3, a + 2, a + 3, a + 2, a + 3, a + 2, a + 3, a + 2,
                         a + 3, a + 2, a + 3, a + 2, a + 3, a + 2, a + 3);
  }
  const int64_t n_blocks = cols / kQKK;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto* blk =
        reinterpret_cast<const BlockQ6_K*>(w + b * static_cast<int64_t>(sizeof(BlockQ6_K)));
    uint16_t dbits;
    std::memcpy(&dbits, &blk->d, 2);
    const float d = _cvtsh_ss(dbits);
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales)));
    const __m256i minus32_sc = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5));
    // Two accumulators per token (even / odd groups): shorter dependency
    // chains. The loops below are unrolled whole so that the groups, their
    // masks and these accumulators stay in registers.
    __m256i isum[T], isum_odd[T];
    for (int t = 0; t < T; ++t) {
      isum[t] = Isa::madd_add(_mm256_setzero_si256(), minus32_sc, load256(tok.x[t].sums + 16 * b));
      isum_odd[t] = _mm256_setzero_si256();
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      // Both 128-bit halves hold this half's 8 scales, so vpshufb can pick
      // (run 2s, run 2s + 1) for group s.
      const __m256i sc_both = _mm256_broadcastsi128_si256(
          h == 0 ? _mm256_castsi256_si128(sc16) : _mm256_extracti128_si256(sc16, 1));
      const __m256i ql0 = load256(blk->ql + 64 * h);
      const __m256i ql1 = load256(blk->ql + 64 * h + 32);
      const __m256i qh = load256(blk->qh + 32 * h);
      const __m256i q0 = _mm256_or_si256(_mm256_and_si256(ql0, m4),
                                         _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                         _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
      const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                         _mm256_and_si256(qh, m30));
      const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                         _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
      const __m256i s0 = _mm256_shuffle_epi8(sc_both, scale_mask[0]);
      const __m256i s1 = _mm256_shuffle_epi8(sc_both, scale_mask[1]);
      const __m256i s2 = _mm256_shuffle_epi8(sc_both, scale_mask[2]);
      const __m256i s3 = _mm256_shuffle_epi8(sc_both, scale_mask[3]);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const int8_t* x = tok.x[t].q + b * kQKK + 128 * h;
        isum[t] = Isa::madd_add(isum[t], _mm256_maddubs_epi16(q0, load256(x)), s0);
        isum_odd[t] = Isa::madd_add(isum_odd[t], _mm256_maddubs_epi16(q1, load256(x + 32)), s1);
        isum[t] = Isa::madd_add(isum[t], _mm256_maddubs_epi16(q2, load256(x + 64)), s2);
        isum_odd[t] = Isa::madd_add(isum_odd[t], _mm256_maddubs_epi16(q3, load256(x + 96)), s3);
      }
    }
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(isum[t], isum_odd[t])),
                               _mm256_set1_ps(d * tok.x[t].d[b]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = acc[t];
}

#if defined(DMOE_QUANT_SIMD_ZMM)
// ---- 512-bit versions of the K-format rows for the AVX-512 levels (the
// including TU also defines DMOE_QUANT_SIMD_ZMM and Isa::madd_add512). A
// 64-byte load covers two Q4_K chunks (sub-blocks 4p..4p+3: low nibbles
// (4p, 4p+2), high nibbles (4p+1, 4p+3)) whose activations are contiguous in
// the interleaved order, or one Q6_K half's 64 low-bit bytes; each
// instruction does twice the work of its 256-bit twin, halving the
// instruction count that bounds the decode speed.

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }

// The two 256-bit halves of a 512-bit sum vector added: the same lane total.
inline __m256 fold512(__m512 a) {
  return _mm256_add_ps(_mm512_castps512_ps256(a),
                       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}

// int16 lanes [a x 16, b x 16], written as 64-bit literals: the compiler
// then loads it from the constant pool. (Built from two set1's and an
// insert, such vectors were rebuilt for every row, ~5 % of a Q4_K GEMV.)
inline __m512i halves_epi16(uint16_t a, uint16_t b) {
  const auto repeat = [](uint16_t v) { return static_cast<int64_t>(v * 0x0001000100010001ULL); };
  return _mm512_set_epi64(repeat(b), repeat(b), repeat(b), repeat(b), repeat(a), repeat(a),
                          repeat(a), repeat(a));
}

// vpshufb control: int16 lanes [byte a x 16, byte b x 16] (zero-extended)
// of a 16-byte table repeated in every 128-bit lane (0x80: write 0).
inline __m512i scale_pair_control(int a, int b) {
  return halves_epi16(static_cast<uint16_t>(0x8000 | a), static_cast<uint16_t>(0x8000 | b));
}

template <class Isa, int T, bool kFifthBit>
void row_k_4_5_zmm(const uint8_t* w, int64_t cols, const Tokens<T>& tok, __m256* out) {
  constexpr int64_t kBlockBytes = kFifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  constexpr int64_t kQsOffset = kFifthBit ? 16 + 32 : 16;
  __m512 acc[T];
  __m128 acc_min[T];
  for (int t = 0; t < T; ++t) {
    acc[t] = _mm512_setzero_ps();
    acc_min[t] = _mm_setzero_ps();
  }
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i bit = _mm512_set1_epi8(0x01);
  // The scale vectors come from the scale bytes by one in-lane vpshufb each
  // (not a cross-lane vpermw from an int16 table), the activation's sub-block
  // sums are XRows::sub_sums, and d, dmin are converted and scaled together:
  // bench_quant_kernels GEMV in cache, one thread, Zen 4, 1.07-1.10x.
  const __m512i pick[2][2] = {{scale_pair_control(0, 2), scale_pair_control(1, 3)},
                              {scale_pair_control(4, 6), scale_pair_control(5, 7)}};
  const __m128i pick_mins =
      _mm_setr_epi8(8, -1, 9, -1, 10, -1, 11, -1, 12, -1, 13, -1, 14, -1, 15, -1);
  const int64_t n_blocks = cols / kQKK;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * kBlockBytes;
    int32_t dbits;
    std::memcpy(&dbits, blk, 4);
    const __m128 d_dmin = _mm_cvtph_ps(_mm_cvtsi32_si128(dbits));  // [d, dmin, 0, 0]
    const __m128i sm = k_scales_mins(blk + 4);
    const __m512i sm_table = _mm512_broadcast_i32x4(sm);  // sc0..sc7, m0..m7 in every lane
    const __m128i mins16 = _mm_shuffle_epi8(sm, pick_mins);
    const uint8_t* qs = blk + kQsOffset;
    __m512i qh = _mm512_setzero_si512();
    if constexpr (kFifthBit) qh = _mm512_broadcast_i64x4(load256(blk + 16));
    __m512i isum_lo[T], isum_hi[T];
    for (int t = 0; t < T; ++t) isum_lo[t] = isum_hi[t] = _mm512_setzero_si512();
    for (int p = 0; p < 2; ++p) {
      const __m512i q = load512(qs + 64 * p);
      __m512i lo = _mm512_and_si512(q, m4);
      __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
      if constexpr (kFifthBit) {
        // Sub-block j's fifth bits are bit j of qh[0..31].
        const auto j = static_cast<uint16_t>(4 * p);
        const __m512i shift_lo = halves_epi16(j, j + 2);
        const __m512i shift_hi = halves_epi16(j + 1, j + 3);
        lo = _mm512_or_si512(
            lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_lo), bit), 4));
        hi = _mm512_or_si512(
            hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_hi), bit), 4));
      }
      const __m512i s_lo = _mm512_shuffle_epi8(sm_table, pick[p][0]);  // sub-blocks 4p, 4p + 2
      const __m512i s_hi = _mm512_shuffle_epi8(sm_table, pick[p][1]);  // 4p + 1, 4p + 3
      for (int t = 0; t < T; ++t) {
        const int8_t* x = tok.x[t].q + b * kQKK + 128 * p;  // interleaved: (4p, 4p+2), (4p+1, 4p+3)
        isum_lo[t] = Isa::madd_add512(isum_lo[t], _mm512_maddubs_epi16(lo, load512(x)), s_lo);
        isum_hi[t] = Isa::madd_add512(isum_hi[t], _mm512_maddubs_epi16(hi, load512(x + 64)), s_hi);
      }
    }
    for (int t = 0; t < T; ++t) {
      // [d dx, dmin dx]: the two products in one multiply, then broadcast.
      const __m128 scales = _mm_mul_ps(d_dmin, _mm_set1_ps(tok.x[t].d[b]));
      const __m128i sub = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tok.sub[t] + 8 * b));
      const __m128i msum = _mm_madd_epi16(sub, mins16);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(isum_lo[t], isum_hi[t])),
                               _mm512_broadcastss_ps(scales), acc[t]);
      acc_min[t] = _mm_fmadd_ps(_mm_cvtepi32_ps(msum), _mm_permute_ps(scales, 0x55), acc_min[t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    out[t] = _mm256_sub_ps(fold512(acc[t]), _mm256_zextps128_ps256(acc_min[t]));
  }
}

template <class Isa, int T>
void row_q6_k_zmm(const uint8_t* w, int64_t cols, const Tokens<T>& tok, __m256* out) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i m30 = _mm512_set1_epi8(0x30);
  // qh bit pairs -> bits 4-5: value run s of a half takes bits 2s..2s+1.
  const __m512i shl_lo = halves_epi16(4, 2);
  const __m512i shr_hi = halves_epi16(0, 2);
  // vpshufb controls: 128-bit lane k takes int16 k (pick_lo) or 4 + k (pick_hi).
  const __m512i pick_lo = _mm512_set_epi64(
      0x0706070607060706, 0x0706070607060706, 0x0504050405040504, 0x0504050405040504,
      0x0302030203020302, 0x0302030203020302, 0x0100010001000100, 0x0100010001000100);
  const __m512i pick_hi = _mm512_add_epi8(pick_lo, _mm512_set1_epi8(8));
  const int64_t n_blocks = cols / kQKK;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto* blk =
        reinterpret_cast<const BlockQ6_K*>(w + b * static_cast<int64_t>(sizeof(BlockQ6_K)));
    uint16_t dbits;
    std::memcpy(&dbits, &blk->d, 2);
    const float d = _cvtsh_ss(dbits);
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales)));
    // Half h's eight scales (int16) in every 128-bit lane.
    const __m512i sc_half[2] = {_mm512_broadcast_i32x4(_mm256_castsi256_si128(sc16)),
                                _mm512_broadcast_i32x4(_mm256_extracti128_si256(sc16, 1))};
    const __m256i minus32_sc = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5));
    __m512i isum_lo[T], isum_hi[T];
    for (int t = 0; t < T; ++t) {
      isum_lo[t] = _mm512_castsi256_si512(
          Isa::madd_add(_mm256_setzero_si256(), minus32_sc, load256(tok.x[t].sums + 16 * b)));
      isum_lo[t] = _mm512_inserti64x4(isum_lo[t], _mm256_setzero_si256(), 1);
      isum_hi[t] = _mm512_setzero_si512();
    }
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = load512(blk->ql + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(load256(blk->qh + 32 * h));
      const __m512i q_lo = _mm512_or_si512(_mm512_and_si512(ql, m4),
                                           _mm512_and_si512(_mm512_sllv_epi16(qh, shl_lo), m30));
      const __m512i q_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                           _mm512_and_si512(_mm512_srlv_epi16(qh, shr_hi), m30));
      // int16 lanes by 8: runs 8h + 0..3 (low) and 8h + 4..7 (high), one
      // in-lane vpshufb each (not a cross-lane vpermw).
      const __m512i s_lo = _mm512_shuffle_epi8(sc_half[h], pick_lo);
      const __m512i s_hi = _mm512_shuffle_epi8(sc_half[h], pick_hi);
      for (int t = 0; t < T; ++t) {
        const int8_t* x = tok.x[t].q + b * kQKK + 128 * h;
        isum_lo[t] = Isa::madd_add512(isum_lo[t], _mm512_maddubs_epi16(q_lo, load512(x)), s_lo);
        isum_hi[t] =
            Isa::madd_add512(isum_hi[t], _mm512_maddubs_epi16(q_hi, load512(x + 64)), s_hi);
      }
    }
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(isum_lo[t], isum_hi[t])),
                               _mm512_set1_ps(d * tok.x[t].d[b]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = fold512(acc[t]);
}

// ---- Dequantization to f32, bit-identical to kernels/quantize.h: the same
// f32 products in the same order (separate multiply and subtract, never a
// fused multiply-add).

// 32 levels (u8 or s8 in a 256-bit vector) times scale, minus offset.
template <bool kSigned>
inline void store_group(__m256i levels, float scale, float offset, float* dst) {
  const __m512 vs = _mm512_set1_ps(scale);
  const __m512 vo = _mm512_set1_ps(offset);
  const __m128i parts[2] = {_mm256_castsi256_si128(levels), _mm256_extracti128_si256(levels, 1)};
  for (int h = 0; h < 2; ++h) {
    const __m512i wide = kSigned ? _mm512_cvtepi8_epi32(parts[h]) : _mm512_cvtepu8_epi32(parts[h]);
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(wide), vs);
    if (offset != 0.0f) v = _mm512_sub_ps(v, vo);
    _mm512_storeu_ps(dst + 16 * h, v);
  }
}

inline void dequantize_impl(WeightType type, const void* src, int64_t n_values, float* dst) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  switch (type) {
    case WeightType::kMXFP4:
      return dequantize_mxfp4_simd(src, n_values, dst);  // cpu/mxfp4_simd.h
    case WeightType::kQ8_0:
      for (int64_t b = 0; b < n_values / kQK; ++b) {
        const uint8_t* blk = bytes + b * 34;
        store_group<true>(load256(blk + 2), load_f16(blk), 0.0f, dst + b * kQK);
      }
      return;
    case WeightType::kQ4_0:
      // Scalar order: float(q - 8) * d, so shift the levels before widening.
      for (int64_t b = 0; b < n_values / kQK; ++b) {
        const uint8_t* blk = bytes + b * 18;
        const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
        const __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), m4);
        store_group<true>(_mm256_sub_epi8(q, _mm256_set1_epi8(8)), load_f16(blk), 0.0f,
                          dst + b * kQK);
      }
      return;
    case WeightType::kQ4_K:
    case WeightType::kQ5_K: {
      const bool q5 = type == WeightType::kQ5_K;
      const int64_t block_bytes = q5 ? 176 : 144;
      for (int64_t b = 0; b < n_values / kQKK; ++b) {
        const uint8_t* blk = bytes + b * block_bytes;
        const float d = load_f16(blk);
        const float dmin = load_f16(blk + 2);
        const __m256i qh = q5 ? load256(blk + 16) : _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
          const __m256i q = load256(blk + (q5 ? 48 : 16) + 32 * c);
          for (int half = 0; half < 2; ++half) {
            const int j = 2 * c + half;
            __m256i levels =
                half == 0 ? _mm256_and_si256(q, m4) : _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (q5) {
              levels = _mm256_or_si256(
                  levels, _mm256_slli_epi16(
                              _mm256_and_si256(_mm256_srli_epi16(qh, j), _mm256_set1_epi8(1)), 4));
            }
            uint8_t sc, m;
            k_scale_min(blk + 4, j, &sc, &m);
            store_group<false>(levels, d * static_cast<float>(sc), dmin * static_cast<float>(m),
                               dst + b * kQKK + 32 * j);
          }
        }
      }
      return;
    }
    case WeightType::kQ6_K: {
      const __m256i m30 = _mm256_set1_epi8(0x30);
      for (int64_t b = 0; b < n_values / kQKK; ++b) {
        const auto* blk = reinterpret_cast<const BlockQ6_K*>(bytes + b * 210);
        const float d = load_f16(&blk->d);
        for (int h = 0; h < 2; ++h) {
          const __m256i ql0 = load256(blk->ql + 64 * h);
          const __m256i ql1 = load256(blk->ql + 64 * h + 32);
          const __m256i qh = load256(blk->qh + 32 * h);
          const __m256i q[4] = {
              _mm256_or_si256(_mm256_and_si256(ql0, m4),
                              _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30)),
              _mm256_or_si256(_mm256_and_si256(ql1, m4),
                              _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                              _mm256_and_si256(qh, m30)),
              _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                              _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30)),
          };
          for (int s = 0; s < 4; ++s) {
            // Two runs of 16 with their own scales: (d * sc) * (q - 32).
            const __m256i levels = _mm256_sub_epi8(q[s], _mm256_set1_epi8(32));
            const int k = 8 * h + 2 * s;
            float* out = dst + b * kQKK + 128 * h + 32 * s;
            for (int r = 0; r < 2; ++r) {
              const __m128i part =
                  r == 0 ? _mm256_castsi256_si128(levels) : _mm256_extracti128_si256(levels, 1);
              const __m512 v =
                  _mm512_mul_ps(_mm512_set1_ps(d * static_cast<float>(blk->scales[k + r])),
                                _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(part)));
              _mm512_storeu_ps(out + 16 * r, v);
            }
          }
        }
      }
      return;
    }
    default:
      return;
  }
}
#endif  // DMOE_QUANT_SIMD_ZMM

template <class Isa, int T>
void row_dot(WeightType type, const uint8_t* w, int64_t cols, const Tokens<T>& tok, __m256* out) {
  switch (type) {
    case WeightType::kQ8_0:
      return row_q8_0<Isa, T>(w, cols, tok, out);
    case WeightType::kQ4_0:
      return row_q4_0<Isa, T>(w, cols, tok, out);
    case WeightType::kMXFP4:
      return row_mxfp4<Isa, T>(w, cols, tok.x, out);  // cpu/mxfp4_simd.h
#if defined(DMOE_QUANT_SIMD_ZMM)
    case WeightType::kQ4_K:
      return row_k_4_5_zmm<Isa, T, false>(w, cols, tok, out);
    case WeightType::kQ5_K:
      return row_k_4_5_zmm<Isa, T, true>(w, cols, tok, out);
    case WeightType::kQ6_K:
      return row_q6_k_zmm<Isa, T>(w, cols, tok, out);
#else
    case WeightType::kQ4_K:
      return row_k_4_5<Isa, T, false>(w, cols, tok, out);
    case WeightType::kQ5_K:
      return row_k_4_5<Isa, T, true>(w, cols, tok, out);
    case WeightType::kQ6_K:
      return row_q6_k<Isa, T>(w, cols, tok, out);
#endif
    default:
      return;
  }
}

// Rows [r0, r1) against tokens [t0, t0 + T). The first token block (t0 ==
// 0: every decode call) reads the rows from DRAM and prefetches the row two
// ahead into L1 as it starts a row: bench_quant_kernels GEMV from DRAM, Q8_0
// one thread 12.8-14.6 -> 13.8-15.4 GB/s, lm_head two threads 20.7-21.9 ->
// 22.2-26.2 (interleaved twice, Zen 3). Later blocks find the rows in L2;
// prefetching there too cost prefill ~10 %.
template <class Isa, int T>
void rows_tokens(const MatmulArgs& args, const XRows& x, int64_t t0, int64_t r0, int64_t r1) {
  const WeightView& w = args.w;
  const Tokens<T> tok = x.tokens<T>(t0);
  const int64_t row_bytes = weight_row_bytes(w.type, w.cols);
  const auto* base = static_cast<const uint8_t*>(w.data);
  const int64_t prefetch_end = t0 == 0 ? r1 - 2 : r0;
  store_rows<T>(args, t0, r0, r1 - r0, [&](int64_t r, __m256* out) {
    if (r < prefetch_end) {
      const char* ahead = reinterpret_cast<const char*>(base + (r + 2) * row_bytes);
      for (int64_t b = 0; b < row_bytes; b += 64) _mm_prefetch(ahead + b, _MM_HINT_T0);
    }
    row_dot<Isa, T>(w.type, base + r * row_bytes, w.cols, tok, out);
  });
}

template <class Isa>
void rows_some_tokens(const MatmulArgs& args, const XRows& x, int64_t t0, int64_t n, int64_t r0,
                      int64_t r1) {
  switch (n) {
    case 1:
      return rows_tokens<Isa, 1>(args, x, t0, r0, r1);
    case 2:
      return rows_tokens<Isa, 2>(args, x, t0, r0, r1);
    case 3:
      return rows_tokens<Isa, 3>(args, x, t0, r0, r1);
    default:
      return rows_tokens<Isa, 4>(args, x, t0, r0, r1);
  }
}

// Q4_K / Q5_K: x's sub-block sums (XRows::subs) in per-thread storage, valid
// until the thread's next call.
inline void attach_sub_sums(const MatmulArgs& args, XRows* x) {
  const int64_t n_blocks = args.w.cols / kQKK;
  thread_local std::vector<int16_t> subs;
  subs.resize(static_cast<size_t>(args.n_tokens * 8 * n_blocks));
  for (int64_t t = 0; t < args.n_tokens; ++t) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(subs.data() + (t * n_blocks + b) * 8),
                       k_sub_sums((*x)[t].sums + 16 * b));
    }
  }
  x->subs = subs.data();
  x->subs_per_token = 8 * n_blocks;
}

#if defined(DMOE_QUANT_SIMD_ZMM) && defined(__AVX512VNNI__)
// ---- Q4_K, Q5_K and Q6_K interleaved by 16 rows (kernels/interleave.h), VNNI only: each
// int32 lane of a 512-bit vector is one of the group's 16 rows. Per
// sub-block j, every 64-byte load of levels is 4 values x 16 rows in its low
// nibbles (quad q) and its high nibbles (quad q + 4); vpdpbusd takes the
// activation's 4 values of that quad broadcast to every lane. High nibbles
// are masked in place (16 x the level, no shift) and their sums divided by
// 16 once per sub-block -- exact: every product is a multiple of 16. Then
// the sub-block's scales multiply its 16 sums at once (vpmulld), the mins
// meet the activation's sub-block sums two sub-blocks per vpdpwssd, and d,
// dmin come as 16 floats. The integer sums per super-block are the rows
// layout's; only the f32 order differs (one multiply-add per super-block
// and row, as the scalar reference).

// Sub-block j's 32 activation values start here in the K formats'
// interleaved order (quant_format.h, q_offset).
constexpr int64_t kSubBlockX[8] = {0, 64, 32, 96, 128, 192, 160, 224};

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Q5_K (kFifthBit): each level's fifth bit joins its nibble (a shift, a
// mask and one vpternlogd per 64 bytes and half); the high nibbles then go
// in as levels (up to 31: 16x would not fit a byte).
template <class Isa, int T, bool kFifthBit = false>
void q4_k_interleaved_group(const uint8_t* group, int64_t n_blocks, const Tokens<T>& tok,
                            float* const y[T]) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i bit4 = _mm512_set1_epi8(0x10);
  constexpr int kAndOr = 0xEA;  // (a & b) | c for vpternlogd
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* o = group + b * (kFifthBit ? kQ5KGroupBytes : kQ4KGroupBytes);
    __m512i tot[T], mins[T];
    for (int t = 0; t < T; ++t) tot[t] = mins[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      __m512i lo[T], hi[T];
      for (int t = 0; t < T; ++t) lo[t] = hi[t] = _mm512_setzero_si512();
      __m512i fifth = _mm512_setzero_si512();
      constexpr int64_t kQsStride = kFifthBit ? kQ5KSubBlockBytes : 256;
      if constexpr (kFifthBit) fifth = load512(o + kQ4KQsOffset + kQsStride * j + 256);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        const __m512i v = load512(o + kQ4KQsOffset + kQsStride * j + 64 * q);
        __m512i v_lo, v_hi;
        if constexpr (kFifthBit) {
          // Bit q of `fifth` to bit 4 for quad q, bit 4 + q for quad 4 + q.
          v_lo = _mm512_ternarylogic_epi32(
              v, m4, _mm512_and_si512(_mm512_slli_epi16(fifth, 4 - q), bit4), kAndOr);
          v_hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 4), m4,
                                           _mm512_and_si512(_mm512_srli_epi16(fifth, q), bit4),
                                           kAndOr);
        } else {
          v_lo = _mm512_and_si512(v, m4);
          v_hi = _mm512_andnot_si512(m4, v);
        }
        for (int t = 0; t < T; ++t) {
          const int8_t* xj = tok.x[t].q + b * kQKK + kSubBlockX[j] + 4 * q;
          lo[t] = _mm512_dpbusd_epi32(lo[t], v_lo, broadcast4(xj));
          hi[t] = _mm512_dpbusd_epi32(hi[t], v_hi, broadcast4(xj + 16));
        }
      }
      const __m512i sc = _mm512_and_si512(
          _mm512_cvtepu8_epi32(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(o + kQ4KScalesOffset + 16 * j))),
          _mm512_set1_epi32(63));
      for (int t = 0; t < T; ++t) {
        const __m512i sums =
            _mm512_add_epi32(lo[t], kFifthBit ? hi[t] : _mm512_srai_epi32(hi[t], 4));
        tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(sums, sc));
      }
    }
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      // Sub-blocks 2u, 2u + 1's mins as int16 [row][2u, 2u + 1]: bits 0-3
      // from mlo, bits 4-5 from the top of their scale bytes.
      const __m512i nibbles = _mm512_cvtepu8_epi16(load256(o + kQ4KMinsOffset + 32 * (u / 2)));
      const __m512i low = u % 2 == 0 ? _mm512_and_si512(nibbles, _mm512_set1_epi16(0x0F))
                                     : _mm512_srli_epi16(nibbles, 4);
      const __m128i a =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(o + kQ4KScalesOffset + 32 * u));
      const __m128i c =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(o + kQ4KScalesOffset + 32 * u + 16));
      const __m512i tops =
          _mm512_cvtepu8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(a, c), _mm_unpacklo_epi8(a, c)));
      const __m512i m16 = _mm512_or_si512(
          low, _mm512_and_si512(_mm512_srli_epi16(tops, 2), _mm512_set1_epi16(0x30)));
      for (int t = 0; t < T; ++t) {
        int32_t pair;  // the activation's sums over sub-blocks 2u, 2u + 1
        std::memcpy(&pair, tok.sub[t] + 8 * b + 2 * u, 4);
        mins[t] = Isa::madd_add512(mins[t], m16, _mm512_set1_epi32(pair));
      }
    }
    const __m512 d = _mm512_cvtph_ps(load256(o));
    const __m512 dmin = _mm512_cvtph_ps(load256(o + kQ4KDminOffset));
    for (int t = 0; t < T; ++t) {
      const __m512 dx = _mm512_set1_ps(tok.x[t].d[b]);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot[t]), _mm512_mul_ps(d, dx), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mins[t]), _mm512_mul_ps(dmin, dx), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y[t], acc[t]);
}

// ---- Q6_K interleaved by 16 rows: the same lanes-are-rows scheme over 16
// sub-blocks of 16 values. Each sub-block is two 64-byte loads of low bits
// (quads 0-1 in low nibbles, 2-3 in high ones) and one of high bits (two per
// quad), joined by a shift, a mask and one vpternlogd per quad; the -32
// offset is the activation's run sums times the scales (one vpdpwssd per
// pair of sub-blocks, 32 x once per super-block), as in the rows kernels.
template <class Isa, int T>
void q6_k_interleaved_group(const uint8_t* group, int64_t n_blocks, const Tokens<T>& tok,
                            float* const y[T]) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i m30 = _mm512_set1_epi8(0x30);
  // (a & b) | c for vpternlogd (a = 0xF0, b = 0xCC, c = 0xAA).
  constexpr int kAndOr = 0xEA;
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* o = group + b * kQ6KGroupBytes;
    __m512i tot[T], offset[T];
    for (int t = 0; t < T; ++t) tot[t] = offset[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int p = 0; p < 8; ++p) {
      // Scales of sub-blocks 2p, 2p + 1 as int16 [row][e], and as int32 per row.
      const __m512i sc16 = _mm512_cvtepi8_epi16(load256(o + kQ6KScalesOffset + 32 * p));
      const __m512i sc[2] = {_mm512_srai_epi32(_mm512_slli_epi32(sc16, 16), 16),
                             _mm512_srai_epi32(sc16, 16)};
      for (int t = 0; t < T; ++t) {
        int32_t pair;  // the activation's sums over sub-blocks 2p, 2p + 1
        std::memcpy(&pair, tok.x[t].sums + 16 * b + 2 * p, 4);
        offset[t] = Isa::madd_add512(offset[t], sc16, _mm512_set1_epi32(pair));
      }
#pragma GCC unroll 2
      for (int e = 0; e < 2; ++e) {
        const int s = 2 * p + e;
        const uint8_t* levels = o + kQ6KLevelsOffset + kQ6KSubBlockBytes * s;
        const __m512i a0 = load512(levels);
        const __m512i a1 = load512(levels + 64);
        const __m512i h = load512(levels + 128);
        const __m512i v[4] = {
            _mm512_ternarylogic_epi32(a0, m4, _mm512_and_si512(_mm512_slli_epi16(h, 4), m30),
                                      kAndOr),
            _mm512_ternarylogic_epi32(a1, m4, _mm512_and_si512(_mm512_slli_epi16(h, 2), m30),
                                      kAndOr),
            _mm512_ternarylogic_epi32(_mm512_srli_epi16(a0, 4), m4, _mm512_and_si512(h, m30),
                                      kAndOr),
            _mm512_ternarylogic_epi32(_mm512_srli_epi16(a1, 4), m4,
                                      _mm512_and_si512(_mm512_srli_epi16(h, 2), m30), kAndOr)};
        for (int t = 0; t < T; ++t) {
          const int8_t* xsb = tok.x[t].q + b * kQKK + 16 * s;
          __m512i d01 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), v[0], broadcast4(xsb));
          __m512i d23 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), v[2], broadcast4(xsb + 8));
          d01 = _mm512_dpbusd_epi32(d01, v[1], broadcast4(xsb + 4));
          d23 = _mm512_dpbusd_epi32(d23, v[3], broadcast4(xsb + 12));
          tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(_mm512_add_epi32(d01, d23), sc[e]));
        }
      }
    }
    const __m512 d = _mm512_cvtph_ps(load256(o));
    for (int t = 0; t < T; ++t) {
      const __m512i sum = _mm512_sub_epi32(tot[t], _mm512_slli_epi32(offset[t], 5));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                               _mm512_mul_ps(d, _mm512_set1_ps(tok.x[t].d[b])), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y[t], acc[t]);
}

// ---- Q8_0 interleaved by 16 rows, against 16-bit activations
// (quant_format.h): each 32-byte load widened (vpmovsxbw) is 2 values of 16
// rows, one vpdpwssd with the activation's 2 values broadcast advances all
// 16; a block's 16 sums meet their d and the group's scale in one
// conversion and one multiply-add. (The rows kernel scales each group's
// block sums once; here each block is scaled on its own, float rounding
// apart the same.)
template <class Isa, int T>
void q8_0_interleaved_group(const uint8_t* group, int64_t n_blocks, const Tokens<T>& tok,
                            float* const y[T]) {
  __m512 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* o = group + b * kQ8GroupBytes;
    __m512i sums[T][2];
    for (int t = 0; t < T; ++t) sums[t][0] = sums[t][1] = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (int k = 0; k < kQK / 2; ++k) {
      const __m512i w = _mm512_cvtepi8_epi16(load256(o + 32 + 32 * k));
      for (int t = 0; t < T; ++t) {
        int32_t pair;  // the activation's values 2k, 2k + 1 of this block
        std::memcpy(&pair, tok.x[t].q16 + b * kQK + 2 * k, 4);
        sums[t][k % 2] = Isa::madd_add512(sums[t][k % 2], w, _mm512_set1_epi32(pair));
      }
    }
    const __m512 d = _mm512_cvtph_ps(load256(o));
    for (int t = 0; t < T; ++t) {
      const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(tok.x[t].d[b * kQK / kQKK]));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(sums[t][0], sums[t][1])), scale,
                               acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(y[t], acc[t]);
}

// Rows [row_begin, row_end) (multiples of 16) of an interleaved Q4_K, Q6_K
// or Q8_0 matrix: each group of 16 rows against every block of up to
// kMaxTokens tokens while its weights are in L1.
template <class Isa>
void matmul_interleaved(const MatmulArgs& args, const void* x_q) {
  if (args.n_tokens <= 0 || args.row_end <= args.row_begin) return;
  XRows x(args.w.type, x_q, args.w.cols);
  const WeightType type = args.w.type;
  if (type == WeightType::kQ4_K || type == WeightType::kQ5_K) attach_sub_sums(args, &x);
  const int64_t n_blocks = args.w.cols / (type == WeightType::kQ8_0 ? kQK : kQKK);
  const int64_t group_bytes = type == WeightType::kQ8_0   ? kQ8GroupBytes
                              : type == WeightType::kQ6_K ? kQ6KGroupBytes
                              : type == WeightType::kQ5_K ? kQ5KGroupBytes
                                                          : kQ4KGroupBytes;
  const auto* base = static_cast<const uint8_t*>(args.w.data);
  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kInterleaveRows) {
    const uint8_t* group = base + r0 / kInterleaveRows * n_blocks * group_bytes;
    for_token_blocks(args.n_tokens, [&]<int T>(int64_t t0) {
      float* y[T];
      for (int t = 0; t < T; ++t) y[t] = args.y + (t0 + t) * args.y_stride + r0;
      const Tokens<T> tok = x.tokens<T>(t0);
      if (type == WeightType::kQ8_0) {
        q8_0_interleaved_group<Isa, T>(group, n_blocks, tok, y);
      } else if (type == WeightType::kQ6_K) {
        q6_k_interleaved_group<Isa, T>(group, n_blocks, tok, y);
      } else if (type == WeightType::kQ5_K) {
        q4_k_interleaved_group<Isa, T, true>(group, n_blocks, tok, y);
      } else {
        q4_k_interleaved_group<Isa, T>(group, n_blocks, tok, y);
      }
    });
  }
}
#endif  // DMOE_QUANT_SIMD_ZMM && __AVX512VNNI__

template <class Isa>
void matmul_quant_impl(const MatmulArgs& args, const void* x_q) {
  if (args.n_tokens <= 0 || args.row_end <= args.row_begin) return;
  XRows x(args.w.type, x_q, args.w.cols);
  if (args.w.type == WeightType::kQ4_K || args.w.type == WeightType::kQ5_K) {
    attach_sub_sums(args, &x);
  }
  if (args.n_tokens < kMaxTokens) {
    return rows_some_tokens<Isa>(args, x, 0, args.n_tokens, args.row_begin, args.row_end);
  }
  if (args.w.type == WeightType::kQ8_0 && args.n_tokens >= kQuadMinTokens) {
    return matmul_q8_0_quads<Isa>(args, x);
  }
  if ((args.w.type == WeightType::kQ4_K || args.w.type == WeightType::kQ5_K) &&
      args.n_tokens >= kQuadMinTokens) {
    if constexpr (Isa::kOneInstructionDot) {
      return matmul_k_grouped<Isa>(args, x);
    } else {
      return matmul_k_unpacked<Isa>(args, x);
    }
  }
  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kRowChunk) {
    const int64_t r1 = r0 + kRowChunk < args.row_end ? r0 + kRowChunk : args.row_end;
    for (int64_t t0 = 0; t0 < args.n_tokens; t0 += kMaxTokens) {
      const int64_t n = args.n_tokens - t0 < kMaxTokens ? args.n_tokens - t0 : kMaxTokens;
      rows_some_tokens<Isa>(args, x, t0, n, r0, r1);
    }
  }
}

// ---- Activation quantization, bit-identical to the scalar reference: the
// same max|x|, the same 127 / max|x| (a scalar division), x * that in f32,
// and vcvtps2dq's round-to-nearest-even.

// max|x| over n (a multiple of 8) values.
inline float abs_max(const float* x, int64_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  }
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// The 16-bit layout (Q8_0): 32767 levels per group of 256 (the last one
// possibly shorter), vpackssdw's saturation matching the reference's clamp.
inline void quantize_x_wide(WeightType type, const float* x, int64_t n_tokens, int64_t cols,
                            void* out) {
  const int64_t group = quantized_x_group(type);
  const int64_t n_groups = (cols + group - 1) / group;
  const int64_t row_bytes = quantized_x_row_bytes(type, cols);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x + t * cols;
    auto* row = static_cast<uint8_t*>(out) + t * row_bytes;
    auto* q = reinterpret_cast<int16_t*>(row);
    auto* d = reinterpret_cast<float*>(row + 2 * cols);
    for (int64_t g = 0; g < n_groups; ++g) {
      const int64_t begin = g * group;
      const int64_t len = cols - begin < group ? cols - begin : group;  // a multiple of 32
      const float* xg = xt + begin;
      const float a = abs_max(xg, len);
      const float id = a > 0.0f ? 32767.0f / a : 0.0f;
      d[g] = a / 32767.0f;
      const __m256 vid = _mm256_set1_ps(id);
      for (int64_t i = 0; i < len; i += 16) {
        const __m256i v0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + i), vid));
        const __m256i v1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + i + 8), vid));
        // vpackssdw interleaves the 128-bit lanes: [v0 lo, v1 lo, v0 hi, v1 hi].
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(v0, v1), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + begin + i), p);
      }
    }
    const int64_t used = cols * 2 + n_groups * 4;
    std::memset(row + used, 0, static_cast<size_t>(row_bytes - used));
  }
}

inline void quantize_x_impl(WeightType type, const float* x, int64_t n_tokens, int64_t cols,
                            void* out) {
  if (wide_x(type)) return quantize_x_wide(type, x, n_tokens, cols, out);
  const int64_t group = quantized_x_group(type);
  const int64_t row_bytes = quantized_x_row_bytes(type, cols);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x + t * cols;
    auto* row = static_cast<uint8_t*>(out) + t * row_bytes;
    auto* q = reinterpret_cast<int8_t*>(row);
    auto* d = reinterpret_cast<float*>(row + cols);
    auto* sums = reinterpret_cast<int16_t*>(row + cols + cols / group * 4);
    for (int64_t g = 0; g < cols / group; ++g) {
      const float* xg = xt + g * group;
      const float a = abs_max(xg, group);
      const float id = a > 0.0f ? 127.0f / a : 0.0f;
      d[g] = a / 127.0f;
      const __m256 vid = _mm256_set1_ps(id);
      alignas(32) int8_t levels[256];
      for (int64_t i = 0; i < group; i += 32) {
        __m256i v[4];
        for (int k = 0; k < 4; ++k) {
          v[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + i + 8 * k), vid));
        }
        // Pack 32 int32 -> 32 int8 (exact: |v| <= 127), then undo the
        // per-128-bit-lane interleaving of the packs.
        const __m256i p16a = _mm256_packs_epi32(v[0], v[1]);
        const __m256i p16b = _mm256_packs_epi32(v[2], v[3]);
        const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
        _mm256_store_si256(
            reinterpret_cast<__m256i*>(levels + i),
            _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
      }
      // Run sums of 16 (value order): widen to int16 and add horizontally.
      for (int64_t r = 0; r < group / 16; ++r) {
        const __m256i w16 =
            _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(levels + 16 * r)));
        const __m256i s32 = _mm256_madd_epi16(w16, _mm256_set1_epi16(1));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
        sums[g * group / 16 + r] = static_cast<int16_t>(_mm_cvtsi128_si32(s4));
      }
      // Store in the layout's order (runs of 32 interleaved for Q4_K / Q5_K).
      for (int64_t i = 0; i < group; i += 32) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + q_offset(type, g * group + i)),
                            _mm256_load_si256(reinterpret_cast<const __m256i*>(levels + i)));
      }
    }
    const int64_t used = cols + cols / group * 4 + cols / 16 * 2;
    std::memset(row + used, 0, static_cast<size_t>(row_bytes - used));
  }
}

}  // namespace
}  // namespace dancemoe::kernels::DMOE_QUANT_SIMD_NS
