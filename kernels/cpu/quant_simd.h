// The 256-bit SIMD quantized matmul and activation quantizer, shared by the
// AVX2 level (cpu/avx2/matmul_quant.cpp) and the AVX-512 VNNI level
// (cpu/avx512/matmul_quant_vnni.cpp). The including TU defines
// DMOE_QUANT_SIMD_NS (its level's namespace) and an `Isa` policy:
//
//   struct Isa {
//     // acc + the sums of 4 adjacent u8 x s8 products per int32 lane
//     static __m256i dot_u8s8(__m256i acc, __m256i u8, __m256i s8);
//   };
//
// (vpmaddubsw + vpmaddwd on AVX2, vpdpbusd with VNNI). Everything else is
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
// the tokens' activations come from L2.
//
// Internal linkage only (anonymous namespace): see cpu/numeric.h.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/cpu/quant_blocks.h"
#include "kernels/quant_format.h"

#ifndef DMOE_QUANT_SIMD_NS
#error "define DMOE_QUANT_SIMD_NS before including quant_simd.h"
#endif

namespace dancemoe::kernels::DMOE_QUANT_SIMD_NS {
namespace {

constexpr int kMaxTokens = 4;
constexpr int64_t kRowChunk = 16;

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline float hsum(__m256 a) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  const __m128 s2 = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// A vector whose int32 lanes add up to v (lane 0 = v, others 0).
inline __m256i lane0(int v) { return _mm256_zextsi128_si256(_mm_cvtsi32_si128(v)); }

// int16 lanes [a x 8, b x 8]: the scales of two runs of 16 bytes after vpmaddubsw.
inline __m256i scale_pair(int a, int b) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(b)),
                          _mm_set1_epi16(static_cast<int16_t>(a)));
}

// The T token rows of one call, decoded once.
template <int T>
struct Tokens {
  QuantizedXRow x[T];
};

// ---- Q8_0: y += sum(w x) d dx per 32-block; |w| x sign(x, w) keeps the
// products in vpmaddubsw's range.
template <class Isa, int T>
void row_q8_0(const uint8_t* w, int64_t cols, const Tokens<T>& tok, float* out) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const int64_t n_blocks = cols / kQK;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * static_cast<int64_t>(sizeof(BlockQ8_0));
    const __m256i q = load256(blk + 2);
    const __m256i aq = _mm256_sign_epi8(q, q);
    uint16_t dbits;
    std::memcpy(&dbits, blk, 2);
    const float d = _cvtsh_ss(dbits);
    for (int t = 0; t < T; ++t) {
      const __m256i xs = _mm256_sign_epi8(load256(tok.x[t].q + b * kQK), q);
      const __m256i p = Isa::dot_u8s8(_mm256_setzero_si256(), aq, xs);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d * tok.x[t].d[b]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum(acc[t]);
}

// ---- Q4_0: levels 0..15 against x, minus 8 sum(x) in the same int32 sum.
template <class Isa, int T>
void row_q4_0(const uint8_t* w, int64_t cols, const Tokens<T>& tok, float* out) {
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
  for (int t = 0; t < T; ++t) out[t] = hsum(acc[t]);
}

// The 8 scales and mins of a Q4_K / Q5_K super-block.
inline void k_scales(const uint8_t* scales, int* sc, __m256i* mins16) {
  uint8_t m[8];
  for (int j = 0; j < 8; ++j) {
    uint8_t s;
    k_scale_min(scales, j, &s, &m[j]);
    sc[j] = s;
  }
  // [m0, m0, m1, m1, ..., m7, m7] as int16: vpmaddwd with the activation's 16
  // run sums gives m_j (sum_{2j} + sum_{2j+1}) per int32 lane.
  int64_t packed;
  std::memcpy(&packed, m, 8);
  const __m128i m16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(packed));
  *mins16 = _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
}

// ---- Q4_K / Q5_K (kFifthBit): per chunk c of 32 bytes, low nibbles are
// sub-block 2c, high nibbles 2c + 1; each run of 32 products is scaled by its
// 6-bit scale in vpmaddwd. Mins: m_j x run sums, scaled by dmin.
template <class Isa, int T, bool kFifthBit>
void row_k_4_5(const uint8_t* w, int64_t cols, const Tokens<T>& tok, float* out) {
  constexpr int64_t kBlockBytes = kFifthBit ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  constexpr int64_t kQsOffset = kFifthBit ? 16 + 32 : 16;
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i bit = _mm256_set1_epi8(0x01);
  const int64_t n_blocks = cols / kQKK;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* blk = w + b * kBlockBytes;
    uint16_t dbits[2];
    std::memcpy(dbits, blk, 4);
    const float d = _cvtsh_ss(dbits[0]);
    const float dmin = _cvtsh_ss(dbits[1]);
    int sc[8];
    __m256i mins16;
    k_scales(blk + 4, sc, &mins16);
    const uint8_t* qs = blk + kQsOffset;
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kFifthBit) qh = load256(blk + 16);
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i q = load256(qs + 32 * c);
      __m256i lo = _mm256_and_si256(q, m4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      if constexpr (kFifthBit) {
        // Bit 2c of qh[k] is value k's fifth bit in sub-block 2c, bit 2c+1 in 2c+1.
        lo = _mm256_or_si256(
            lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), bit), 4));
        hi = _mm256_or_si256(
            hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), bit), 4));
      }
      const __m256i s_lo = _mm256_set1_epi16(static_cast<int16_t>(sc[2 * c]));
      const __m256i s_hi = _mm256_set1_epi16(static_cast<int16_t>(sc[2 * c + 1]));
      for (int t = 0; t < T; ++t) {
        const int8_t* x = tok.x[t].q + b * kQKK + 64 * c;
        const __m256i p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load256(x)), s_lo);
        const __m256i p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load256(x + 32)), s_hi);
        isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(p_lo, p_hi));
      }
    }
    for (int t = 0; t < T; ++t) {
      const float dx = tok.x[t].d[b];
      const __m256i msum = _mm256_madd_epi16(load256(tok.x[t].sums + 16 * b), mins16);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(d * dx), acc[t]);
      acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * dx), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum(acc[t]);
}

// ---- Q6_K: per half of 128 values, four groups of 32 (levels 0..63) whose
// two runs of 16 have their own int8 scales; the -32 offset is folded in as
// 32 sum_k sc_k sum_k(x).
template <class Isa, int T>
void row_q6_k(const uint8_t* w, int64_t cols, const Tokens<T>& tok, float* out) {
  __m256 acc[T];
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  const int64_t n_blocks = cols / kQKK;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const auto* blk =
        reinterpret_cast<const BlockQ6_K*>(w + b * static_cast<int64_t>(sizeof(BlockQ6_K)));
    uint16_t dbits;
    std::memcpy(&dbits, &blk->d, 2);
    const float d = _cvtsh_ss(dbits);
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk->scales)));
    __m256i isum[T];
    for (int t = 0; t < T; ++t) {
      // -32 sum_k sc_k sum_k(x), as lanes that add up to it.
      isum[t] = _mm256_sub_epi32(
          _mm256_setzero_si256(),
          _mm256_slli_epi32(_mm256_madd_epi16(sc16, load256(tok.x[t].sums + 16 * b)), 5));
    }
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
        const int k = 8 * h + 2 * s;
        const __m256i scale = scale_pair(blk->scales[k], blk->scales[k + 1]);
        for (int t = 0; t < T; ++t) {
          const int8_t* x = tok.x[t].q + b * kQKK + 128 * h + 32 * s;
          isum[t] = _mm256_add_epi32(
              isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q[s], load256(x)), scale));
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      acc[t] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(d * tok.x[t].d[b]), acc[t]);
    }
  }
  for (int t = 0; t < T; ++t) out[t] = hsum(acc[t]);
}

template <class Isa, int T>
void row_dot(WeightType type, const uint8_t* w, int64_t cols, const Tokens<T>& tok, float* out) {
  switch (type) {
    case WeightType::kQ8_0:
      return row_q8_0<Isa, T>(w, cols, tok, out);
    case WeightType::kQ4_0:
      return row_q4_0<Isa, T>(w, cols, tok, out);
    case WeightType::kQ4_K:
      return row_k_4_5<Isa, T, false>(w, cols, tok, out);
    case WeightType::kQ5_K:
      return row_k_4_5<Isa, T, true>(w, cols, tok, out);
    case WeightType::kQ6_K:
      return row_q6_k<Isa, T>(w, cols, tok, out);
    default:
      return;
  }
}

// Rows [r0, r1) against tokens [t0, t0 + T).
template <class Isa, int T>
void rows_tokens(const MatmulArgs& args, const void* x_q, int64_t t0, int64_t r0, int64_t r1) {
  const WeightView& w = args.w;
  Tokens<T> tok;
  for (int t = 0; t < T; ++t) tok.x[t] = quantized_x_row(w.type, x_q, w.cols, t0 + t);
  const int64_t row_bytes = weight_row_bytes(w.type, w.cols);
  float out[T] = {};
  for (int64_t r = r0; r < r1; ++r) {
    row_dot<Isa, T>(w.type, static_cast<const uint8_t*>(w.data) + r * row_bytes, w.cols, tok, out);
    for (int t = 0; t < T; ++t) args.y[(t0 + t) * args.y_stride + r] = out[t];
  }
}

template <class Isa>
void rows_some_tokens(const MatmulArgs& args, const void* x_q, int64_t t0, int64_t n, int64_t r0,
                      int64_t r1) {
  switch (n) {
    case 1:
      return rows_tokens<Isa, 1>(args, x_q, t0, r0, r1);
    case 2:
      return rows_tokens<Isa, 2>(args, x_q, t0, r0, r1);
    case 3:
      return rows_tokens<Isa, 3>(args, x_q, t0, r0, r1);
    default:
      return rows_tokens<Isa, 4>(args, x_q, t0, r0, r1);
  }
}

template <class Isa>
void matmul_quant_impl(const MatmulArgs& args, const void* x_q) {
  if (args.n_tokens <= 0 || args.row_end <= args.row_begin) return;
  if (args.n_tokens < kMaxTokens) {
    return rows_some_tokens<Isa>(args, x_q, 0, args.n_tokens, args.row_begin, args.row_end);
  }
  for (int64_t r0 = args.row_begin; r0 < args.row_end; r0 += kRowChunk) {
    const int64_t r1 = r0 + kRowChunk < args.row_end ? r0 + kRowChunk : args.row_end;
    for (int64_t t0 = 0; t0 < args.n_tokens; t0 += kMaxTokens) {
      const int64_t n = args.n_tokens - t0 < kMaxTokens ? args.n_tokens - t0 : kMaxTokens;
      rows_some_tokens<Isa>(args, x_q, t0, n, r0, r1);
    }
  }
}

// ---- Activation quantization, bit-identical to the scalar reference: the
// same max|x|, the same 127 / max|x| (a scalar division), x * that in f32,
// and vcvtps2dq's round-to-nearest-even.
inline void quantize_x_impl(WeightType type, const float* x, int64_t n_tokens, int64_t cols,
                            void* out) {
  const int64_t group = quantized_x_group(type);
  const int64_t row_bytes = quantized_x_row_bytes(type, cols);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* xt = x + t * cols;
    auto* row = static_cast<uint8_t*>(out) + t * row_bytes;
    auto* q = reinterpret_cast<int8_t*>(row);
    auto* d = reinterpret_cast<float*>(row + cols);
    auto* sums = reinterpret_cast<int16_t*>(row + cols + cols / group * 4);
    for (int64_t g = 0; g < cols / group; ++g) {
      const float* xg = xt + g * group;
      __m256 amax = _mm256_setzero_ps();
      for (int64_t i = 0; i < group; i += 8) {
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(xg + i)));
      }
      __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
      m = _mm_max_ps(m, _mm_movehl_ps(m, m));
      m = _mm_max_ss(m, _mm_movehdup_ps(m));
      const float a = _mm_cvtss_f32(m);
      const float id = a > 0.0f ? 127.0f / a : 0.0f;
      d[g] = a / 127.0f;
      const __m256 vid = _mm256_set1_ps(id);
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
        const __m256i ordered =
            _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + g * group + i), ordered);
      }
    }
    // Run sums of 16: widen 16 levels to int16 and add horizontally.
    for (int64_t s = 0; s < cols / 16; ++s) {
      const __m256i v =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * s)));
      const __m256i s32 = _mm256_madd_epi16(v, _mm256_set1_epi16(1));
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
      sums[s] = static_cast<int16_t>(_mm_cvtsi128_si32(s4));
    }
    const int64_t used = cols + cols / group * 4 + cols / 16 * 2;
    std::memset(row + used, 0, static_cast<size_t>(row_bytes - used));
  }
}

}  // namespace
}  // namespace dancemoe::kernels::DMOE_QUANT_SIMD_NS
