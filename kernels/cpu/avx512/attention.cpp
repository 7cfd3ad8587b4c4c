// One query position against n_ctx cached positions, per query head h:
//   s[j]   = scale * q[h] . k[j, kvh]         kvh = h / (n_heads / n_kv_heads)
//   p      = softmax(s)     (over [s, sinks[h]] with attention sinks)
//   out[h] = sum_j p[j] v[j, kvh]
// q, out: [n_heads, head_dim]; k, v: [n_ctx, kv_stride], f32 or bf16 (k_bf16,
// v_bf16: each element widened to f32 as it is loaded, the math unchanged)
//
// Up to 4 query heads that share a KV head (grouped-query attention) are
// done together, block of 64 positions by block: every K or V vector loaded
// serves all of them (the loads, not the FMAs, bound a one-head-at-a-time
// loop), and K and V come from memory once per group instead of once per
// head. The softmax is online (the flash-decoding recurrence): per head a
// running maximum m and sum l; out is rescaled by exp(m_old - m_new) whenever
// the maximum grows and divided by l at the end. The loops over blocks and
// groups are kernels/cpu/blocked_attention.h's. Scores live in a small stack
// buffer, so args.scratch is not used.
#include <immintrin.h>

#include "kernels/cpu/avx512/avx512_ops.h"
#include "kernels/cpu/avx512/avx512_util.h"
#include "kernels/cpu/blocked_attention.h"

namespace dancemoe::kernels::avx512 {
namespace {

using blocked_attention::kBlock;
constexpr auto kPrefetchHint = _MM_HINT_T2;

// 16 KV elements (f32 or bf16) as f32; masked lanes read as 0.
inline __m512 load_kv(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load_kv(const uint16_t* p, __mmask16 m) { return load_bf16x16_masked(p, m); }

// Masks of the 16-lane pieces of a 64-column chunk [d, d + 64) of head_dim.
struct ChunkMasks {
  __mmask16 m[4];
  ChunkMasks(int64_t head_dim, int64_t d) {
    for (int i = 0; i < 4; ++i) {
      const int64_t valid = head_dim - d - 16 * i;
      m[i] = low_mask16(valid <= 0 ? 0 : (valid < 16 ? valid : 16));
    }
  }
};

// out[g][d, d + 16W) = out * correction[g] + sum_j p[g][j] v[j] for the G
// heads (columns past head_dim masked): each V load serves G FMAs.
template <int G, int W, class E>
void value_columns(const float (*p)[kBlock], const E* v, int64_t kv_stride, int64_t n,
                   int64_t head_dim, int64_t d, const float* correction, float* const* out) {
  const ChunkMasks masks(head_dim, d);
  __m512 acc[G][W];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m512 corr = _mm512_set1_ps(correction[g]);
#pragma GCC unroll 4
    for (int i = 0; i < W; ++i) {
      acc[g][i] = _mm512_mul_ps(corr, _mm512_maskz_loadu_ps(masks.m[i], out[g] + d + 16 * i));
    }
  }
  const int64_t row_bytes =
      (head_dim - d < 16 * W ? head_dim - d : 16 * W) * static_cast<int64_t>(sizeof(E));
  for (int64_t j = 0; j < n; ++j) {
    const E* vj = v + j * kv_stride + d;
    const char* next = reinterpret_cast<const char*>(vj + kBlock * kv_stride);
    for (int64_t b = 0; b < row_bytes; b += 64) {
      _mm_prefetch(next + b, kPrefetchHint);
    }
    __m512 vv[W];
#pragma GCC unroll 4
    for (int i = 0; i < W; ++i) vv[i] = load_kv(vj + 16 * i, masks.m[i]);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const __m512 pj = _mm512_set1_ps(p[g][j]);
#pragma GCC unroll 4
      for (int i = 0; i < W; ++i) acc[g][i] = _mm512_fmadd_ps(pj, vv[i], acc[g][i]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
#pragma GCC unroll 4
    for (int i = 0; i < W; ++i) _mm512_mask_storeu_ps(out[g] + d + 16 * i, masks.m[i], acc[g][i]);
  }
}

// This level's arithmetic for blocked_attention::run (its contract).
struct Avx512Blocks {
  // s[g][j] = scale * q[g] . k[j] for j in [0, n), G heads x 4 keys per pass:
  // per 16 columns, 4 key loads and G query loads feed 4 * G FMAs.
  template <int G, class E>
  static void scores(const float* const* q, const E* k, int64_t kv_stride, int64_t n,
                     int64_t head_dim, float scale, float (*s)[kBlock]) {
    const __m128 scale4 = _mm_set1_ps(scale);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const E* k0 = k + j * kv_stride;
      // The same keys of the next block: rows kv_stride apart defeat the
      // hardware prefetchers when the KV cache is larger than the caches.
      for (int i = 0; i < 4; ++i) {
        const char* row = reinterpret_cast<const char*>(k0 + (kBlock + i) * kv_stride);
        for (int64_t b = 0; b < head_dim * static_cast<int64_t>(sizeof(E)); b += 64) {
          _mm_prefetch(row + b, kPrefetchHint);
        }
      }
      __m512 acc[G][4];
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) acc[g][i] = _mm512_setzero_ps();
      }
      for (int64_t d = 0; d < head_dim; d += 16) {
        const __mmask16 m = low_mask16(head_dim - d < 16 ? head_dim - d : 16);
        __m512 kv[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) kv[i] = load_kv(k0 + i * kv_stride + d, m);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g) {
          const __m512 qv = _mm512_maskz_loadu_ps(m, q[g] + d);
#pragma GCC unroll 4
          for (int i = 0; i < 4; ++i) acc[g][i] = _mm512_fmadd_ps(qv, kv[i], acc[g][i]);
        }
      }
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        _mm_storeu_ps(s[g] + j,
                      _mm_mul_ps(scale4, reduce4(acc[g][0], acc[g][1], acc[g][2], acc[g][3])));
      }
    }
    for (; j < n; ++j) {
      for (int g = 0; g < G; ++g) {
        if constexpr (sizeof(E) == sizeof(float)) {
          s[g][j] = scale * dot(q[g], k + j * kv_stride, head_dim);
        } else {
          __m512 acc = _mm512_setzero_ps();
          for (int64_t d = 0; d < head_dim; d += 16) {
            const __mmask16 m = low_mask16(head_dim - d < 16 ? head_dim - d : 16);
            acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q[g] + d),
                                  load_kv(k + j * kv_stride + d, m), acc);
          }
          s[g][j] = scale * _mm512_reduce_add_ps(acc);
        }
      }
    }
  }

  // The values of a block for the G heads: 64 columns a pass, a last pass of
  // at most 32 columns in two registers (head_dim 32 or 96 spent half of its
  // last pass's FMAs on masked lanes). A column's operations do not depend on
  // the pass that holds it.
  template <int G, class E>
  static void accumulate_values(const float (*p)[kBlock], const E* v, int64_t kv_stride, int64_t n,
                                int64_t head_dim, const float* correction, float* const* out) {
    for (int64_t d = 0; d < head_dim; d += 64) {
      if (head_dim - d > 32) {
        value_columns<G, 4>(p, v, kv_stride, n, head_dim, d, correction, out);
      } else {
        value_columns<G, 2>(p, v, kv_stride, n, head_dim, d, correction, out);
      }
    }
  }

  // s[0, n) = exp(s - m_new) in place; returns their sum.
  static float exp_shifted(float* s, int64_t n, float m_new) {
    return exp_shifted_sum(s, n, m_new);
  }

  static float block_max(const float* s, int64_t n) {
    const __m512 neg_inf = _mm512_set1_ps(-__builtin_inff());
    __m512 max_v = neg_inf;
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = low_mask16(n - j < 16 ? n - j : 16);
      max_v = _mm512_max_ps(max_v, _mm512_mask_loadu_ps(neg_inf, m, s + j));
    }
    return _mm512_reduce_max_ps(max_v);
  }

  // exp(x) for one value, by the vector exp.
  static float exp1(float x) { return _mm512_cvtss_f32(exp_ps(_mm512_set1_ps(x))); }

  // out[h] /= its running sum.
  static void finish_head(const AttentionArgs& a, int64_t h, float running_sum) {
    float* out = a.out + h * a.head_dim;
    // n_ctx == 0 leaves the sum at 0 and out at 0, as the reference does.
    const __m512 inv = _mm512_set1_ps(running_sum > 0.0f ? 1.0f / running_sum : 0.0f);
    for (int64_t d = 0; d < a.head_dim; d += 16) {
      const __mmask16 m = low_mask16(a.head_dim - d < 16 ? a.head_dim - d : 16);
      _mm512_mask_storeu_ps(out + d, m, _mm512_mul_ps(inv, _mm512_maskz_loadu_ps(m, out + d)));
    }
  }
};

}  // namespace

void attention(const AttentionArgs& a) {
  if (a.k_bf16 != nullptr) {
    blocked_attention::run<Avx512Blocks>(a, a.k_bf16, a.v_bf16);
  } else {
    blocked_attention::run<Avx512Blocks>(a, a.k, a.v);
  }
}

}  // namespace dancemoe::kernels::avx512
