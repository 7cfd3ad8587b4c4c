// One query position against n_ctx cached positions, per query head h:
//   s[j]   = scale * q[h] . k[j, kvh]         kvh = h / (n_heads / n_kv_heads)
//   p      = softmax(s)     (over [s, sinks[h]] with attention sinks)
//   out[h] = sum_j p[j] v[j, kvh]
// q, out: [n_heads, head_dim]; k, v: [n_ctx, kv_stride], f32 or bf16 (k_bf16,
// v_bf16: each element widened to f32 as it is loaded, the math unchanged)
//
// The AVX-512 kernel's method (see its file; the loops over blocks of 64
// positions and groups of up to 4 heads sharing a KV head are
// kernels/cpu/blocked_attention.h's) in 8-lane registers: a key or value
// loaded serves every head of its group -- a one-head-at-a-time loop loads
// each key once per head and is bound by those loads -- and the softmax is
// online. 16 ymm registers hold at most two heads' accumulators for four
// keys, so the heads of a group go two by two over the same four keys (in L1
// by then). The last head_dim % 8 columns go by scalar loops. Scores live in
// a small stack buffer: args.scratch is not used.
#include <immintrin.h>

#include "kernels/cpu/avx2/avx2_ops.h"
#include "kernels/cpu/avx2/avx2_util.h"
#include "kernels/cpu/blocked_attention.h"
#include "kernels/cpu/numeric.h"

namespace dancemoe::kernels::avx2 {
namespace {

using blocked_attention::kBlock;
constexpr auto kPrefetchHint = _MM_HINT_T2;

// 8 KV elements (f32 or bf16) as f32, and one.
inline __m256 load_kv(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load_kv(const uint16_t* p) { return load_bf16x8(p); }
inline float kv_value(float v) { return v; }
inline float kv_value(uint16_t v) { return bf16_to_float(v); }

// The rows of keys j0..j0+3 one block ahead: rows kv_stride apart defeat the
// hardware prefetchers when the KV cache is larger than the caches.
template <class E>
void prefetch_next_block(const E* k0, int64_t kv_stride, int64_t head_dim) {
  for (int i = 0; i < 4; ++i) {
    const char* row = reinterpret_cast<const char*>(k0 + (kBlock + i) * kv_stride);
    for (int64_t b = 0; b < head_dim * static_cast<int64_t>(sizeof(E)); b += 64) {
      _mm_prefetch(row + b, kPrefetchHint);
    }
  }
}

// s[h][j + i] = scale * q[h] . k[i] for the H (1 or 2) heads q and the four
// keys k0 + i * kv_stride: per 8 columns 4 key loads and H query loads feed
// 4 * H FMAs.
template <int H, class E>
void four_keys(const float* const* q, const E* k0, int64_t kv_stride, int64_t head_dim, float scale,
               int64_t j, float (*s)[kBlock]) {
  const int64_t d_vec = head_dim & ~int64_t{7};
  __m256 acc[H][4];
#pragma GCC unroll 2
  for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) acc[h][i] = _mm256_setzero_ps();
  }
  for (int64_t d = 0; d < d_vec; d += 8) {
    __m256 kv[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) kv[i] = load_kv(k0 + i * kv_stride + d);
#pragma GCC unroll 2
    for (int h = 0; h < H; ++h) {
      const __m256 qv = _mm256_loadu_ps(q[h] + d);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) acc[h][i] = _mm256_fmadd_ps(qv, kv[i], acc[h][i]);
    }
  }
  for (int h = 0; h < H; ++h) {
    float sums[4];
    _mm_storeu_ps(sums, reduce4(acc[h][0], acc[h][1], acc[h][2], acc[h][3]));
    for (int i = 0; i < 4; ++i) {
      const E* ki = k0 + i * kv_stride;
      for (int64_t d = d_vec; d < head_dim; ++d) sums[i] += q[h][d] * kv_value(ki[d]);
      s[h][j + i] = scale * sums[i];
    }
  }
}

// out[g][d, d + 8W) = out * correction[g] + sum_j p[g][j] v[j] for the G
// heads: each V load serves G FMAs. A column's operations are the same for
// any W, so W is chosen to fit the registers.
template <int G, int W, class E>
void value_columns(const float (*p)[kBlock], const E* v, int64_t kv_stride, int64_t n, int64_t d,
                   const float* correction, float* const* out) {
  __m256 acc[G][W];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m256 corr = _mm256_set1_ps(correction[g]);
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w)
      acc[g][w] = _mm256_mul_ps(corr, _mm256_loadu_ps(out[g] + d + 8 * w));
  }
  for (int64_t j = 0; j < n; ++j) {
    const E* vj = v + j * kv_stride + d;
    // The same columns one block ahead (see prefetch_next_block).
    const char* next = reinterpret_cast<const char*>(vj + kBlock * kv_stride);
    for (int64_t b = 0; b < 8 * W * static_cast<int64_t>(sizeof(E)); b += 64) {
      _mm_prefetch(next + b, kPrefetchHint);
    }
    __m256 vv[W];
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w) vv[w] = load_kv(vj + 8 * w);
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const __m256 pj = _mm256_set1_ps(p[g][j]);
#pragma GCC unroll 4
      for (int w = 0; w < W; ++w) acc[g][w] = _mm256_fmadd_ps(pj, vv[w], acc[g][w]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w) _mm256_storeu_ps(out[g] + d + 8 * w, acc[g][w]);
  }
}

// This level's arithmetic for blocked_attention::run (its contract).
struct Avx2Blocks {
  // s[g][j] = scale * q[g] . k[j] for j in [0, n) and the G heads.
  template <int G, class E>
  static void scores(const float* const* q, const E* k, int64_t kv_stride, int64_t n,
                     int64_t head_dim, float scale, float (*s)[kBlock]) {
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const E* k0 = k + j * kv_stride;
      prefetch_next_block(k0, kv_stride, head_dim);
#pragma GCC unroll 2
      for (int g = 0; g + 1 < G; g += 2)
        four_keys<2>(q + g, k0, kv_stride, head_dim, scale, j, s + g);
      if constexpr (G % 2 == 1)
        four_keys<1>(q + G - 1, k0, kv_stride, head_dim, scale, j, s + G - 1);
    }
    const int64_t d_vec = head_dim & ~int64_t{7};
    for (; j < n; ++j) {
      const E* kj = k + j * kv_stride;
      for (int g = 0; g < G; ++g) {
        __m256 acc = _mm256_setzero_ps();
        for (int64_t d = 0; d < d_vec; d += 8) {
          acc = _mm256_fmadd_ps(_mm256_loadu_ps(q[g] + d), load_kv(kj + d), acc);
        }
        float sum = reduce(acc);
        for (int64_t d = d_vec; d < head_dim; ++d) sum += q[g][d] * kv_value(kj[d]);
        s[g][j] = scale * sum;
      }
    }
  }

  // The values of a block for the G heads over all head_dim columns: 32 columns
  // a pass for up to two heads, 16 for more (G x W accumulators, W value
  // registers and a broadcast within 16 registers), then 8, then scalar.
  template <int G, class E>
  static void accumulate_values(const float (*p)[kBlock], const E* v, int64_t kv_stride, int64_t n,
                                int64_t head_dim, const float* correction, float* const* out) {
    constexpr int kWide = G <= 2 ? 4 : 2;
    const int64_t d_vec = head_dim & ~int64_t{7};
    int64_t d = 0;
    for (; d + 8 * kWide <= d_vec; d += 8 * kWide) {
      value_columns<G, kWide>(p, v, kv_stride, n, d, correction, out);
    }
    for (; d < d_vec; d += 8) value_columns<G, 1>(p, v, kv_stride, n, d, correction, out);
    for (; d < head_dim; ++d) {
      for (int g = 0; g < G; ++g) {
        float acc = out[g][d] * correction[g];
        for (int64_t j = 0; j < n; ++j) acc += p[g][j] * kv_value(v[j * kv_stride + d]);
        out[g][d] = acc;
      }
    }
  }

  // s[0, n) = exp(s - m_new) in place; returns their sum. A last partial
  // vector goes through a padded copy, so every position takes the same exp.
  static float exp_shifted(float* s, int64_t n, float m_new) {
    const __m256 shift = _mm256_set1_ps(m_new);
    __m256 sum = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(s + j), shift));
      sum = _mm256_add_ps(sum, e);
      _mm256_storeu_ps(s + j, e);
    }
    if (j < n) {
      alignas(32) float tail[8];
      for (int i = 0; i < 8; ++i) tail[i] = j + i < n ? s[j + i] : -__builtin_inff();
      const __m256 e = exp_ps(_mm256_sub_ps(_mm256_load_ps(tail), shift));
      sum = _mm256_add_ps(sum, e);  // exp(-inf) = 0 in the padding
      _mm256_store_ps(tail, e);
      for (int64_t i = 0; j + i < n; ++i) s[j + i] = tail[i];
    }
    return reduce(sum);
  }

  static float block_max(const float* s, int64_t n) {
    __m256 max_v = _mm256_set1_ps(-__builtin_inff());
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) max_v = _mm256_max_ps(max_v, _mm256_loadu_ps(s + j));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(max_v), _mm256_extractf128_ps(max_v, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    float m = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
    for (; j < n; ++j) m = s[j] > m ? s[j] : m;
    return m;
  }

  // exp(x) for one value, by the vector exp.
  static float exp1(float x) { return _mm256_cvtss_f32(exp_ps(_mm256_set1_ps(x))); }

  // out[h] /= its running sum.
  static void finish_head(const AttentionArgs& a, int64_t h, float running_sum) {
    float* out = a.out + h * a.head_dim;
    // n_ctx == 0 leaves the sum at 0 and out at 0, as the reference does.
    const float inv = running_sum > 0.0f ? 1.0f / running_sum : 0.0f;
    const __m256 inv8 = _mm256_set1_ps(inv);
    int64_t d = 0;
    for (; d + 8 <= a.head_dim; d += 8) {
      _mm256_storeu_ps(out + d, _mm256_mul_ps(inv8, _mm256_loadu_ps(out + d)));
    }
    for (; d < a.head_dim; ++d) out[d] *= inv;
  }
};

}  // namespace

void attention(const AttentionArgs& a) {
  if (a.k_bf16 != nullptr) {
    blocked_attention::run<Avx2Blocks>(a, a.k_bf16, a.v_bf16);
  } else {
    blocked_attention::run<Avx2Blocks>(a, a.k, a.v);
  }
}

}  // namespace dancemoe::kernels::avx2
