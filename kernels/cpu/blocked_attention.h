// The loop structure shared by the SIMD attention kernels (avx2/, avx512/):
// the query heads of a call in groups of up to 4 that share a KV head, run
// block of 64 positions by block with an online softmax (the flash-decoding
// recurrence: per head a running maximum and sum, out rescaled whenever the
// maximum grows and divided by the sum at the end).
//
// The blocks are the outer loop: all the groups of a block read the same
// rows of K and V while they are in cache, so a call over several KV heads
// streams whole rows from memory once, instead of each KV head's columns --
// a sliver of every row, rows kv_stride apart -- once per head. Batched
// decode (CpuForward::attend gives a token's heads to one call) read its
// cache at ~18 GB/s that way against a 36 GB/s probe (small preset, 16
// sequences of 1000 positions). Each head's operations and their order are
// those of a call for that head alone, so the results do not depend on the
// range of heads a call covers.
//
// A level supplies the arithmetic as static members of a type in its own
// anonymous namespace (so every instantiation here has internal linkage and
// no SIMD code can become a program-wide symbol):
//   template <int G, class E> scores(q[G], k, kv_stride, n, head_dim, scale,
//       s[G][kBlock])        s[g][j] = scale * q[g] . k[j], j < n <= kBlock
//   block_max(s, n)          max of s[0, n)
//   exp1(x)                  exp(x), as exp_shifted computes it
//   exp_shifted(s, n, m)     s[j] = exp(s[j] - m) in place; returns their sum
//   template <int G, class E> accumulate_values(p[G][kBlock], v, kv_stride,
//       n, head_dim, correction[G], out[G])
//                            out[g] = out[g] * correction[g] + sum_j p[g][j] v[j]
//   finish_head(a, h, sum)   out[h] /= sum (0 when sum is 0: no positions)
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace dancemoe::kernels::blocked_attention {

constexpr int kMaxGroup = 4;    // heads fused per pass
constexpr int64_t kBlock = 64;  // positions per block

struct Group {
  int64_t h0;
  int size;
  int64_t kv_offset;
};
constexpr int64_t kMaxHeadsPerPass = 256;

// Positions [j0, j0 + n) of the G query heads [h0, h0 + G) that share the
// KV columns at kv_offset: scores, the online softmax's update, the values.
template <class Level, int G, class E>
void group_block(const AttentionArgs& a, const E* k, const E* v, int64_t h0, int64_t kv_offset,
                 int64_t j0, int64_t n, float* running_max, float* running_sum) {
  const float* q[G];
  float* out[G];
  float s[G][kBlock];
  float correction[G];
  for (int g = 0; g < G; ++g) {
    q[g] = a.q + (h0 + g) * a.head_dim;
    out[g] = a.out + (h0 + g) * a.head_dim;
  }
  Level::template scores<G>(q, k + j0 * a.kv_stride + kv_offset, a.kv_stride, n, a.head_dim,
                            a.scale, s);
  for (int g = 0; g < G; ++g) {
    const float m_block = Level::block_max(s[g], n);
    const float m_new = m_block > running_max[g] ? m_block : running_max[g];
    // exp(-inf) = 0 on the first block: nothing to rescale yet.
    correction[g] = Level::exp1(running_max[g] - m_new);
    running_sum[g] = running_sum[g] * correction[g] + Level::exp_shifted(s[g], n, m_new);
    running_max[g] = m_new;
  }
  Level::template accumulate_values<G>(s, v + j0 * a.kv_stride + kv_offset, a.kv_stride, n,
                                       a.head_dim, correction, out);
}

// Attention of the heads [a.head_begin, a.head_end) over k and v (a.k / a.v
// or their bf16 forms).
template <class Level, class E>
void run(const AttentionArgs& a, const E* k, const E* v) {
  const int64_t group = a.n_heads / a.n_kv_heads;
  Group groups[kMaxHeadsPerPass];
  float running_max[kMaxHeadsPerPass];
  float running_sum[kMaxHeadsPerPass];
  for (int64_t first = a.head_begin; first < a.head_end;) {
    // Up to kMaxHeadsPerPass heads at once (in practice every head).
    const int64_t last =
        a.head_end - first > kMaxHeadsPerPass ? first + kMaxHeadsPerPass : a.head_end;
    int n_groups = 0;
    for (int64_t h = first; h < last;) {
      const int64_t kv_head = h / group;
      // The heads of this KV head inside [h, last), at most 4.
      int64_t end = (kv_head + 1) * group;
      end = end < last ? end : last;
      end = end - h > kMaxGroup ? h + kMaxGroup : end;
      groups[n_groups++] = {h, static_cast<int>(end - h), kv_head * a.head_dim};
      h = end;
    }
    // out at 0; an attention sink is a first position with no value: it
    // starts the running maximum and sum.
    for (int64_t h = first; h < last; ++h) {
      running_max[h - first] = a.sinks != nullptr ? a.sinks[h] : -__builtin_inff();
      running_sum[h - first] = a.sinks != nullptr ? 1.0f : 0.0f;
      float* out = a.out + h * a.head_dim;
      for (int64_t d = 0; d < a.head_dim; ++d) out[d] = 0.0f;
    }
    for (int64_t j0 = 0; j0 < a.n_ctx; j0 += kBlock) {
      const int64_t n = a.n_ctx - j0 < kBlock ? a.n_ctx - j0 : kBlock;
      for (int i = 0; i < n_groups; ++i) {
        const Group& gr = groups[i];
        float* m = running_max + (gr.h0 - first);
        float* l = running_sum + (gr.h0 - first);
        switch (gr.size) {
          case 1:
            group_block<Level, 1>(a, k, v, gr.h0, gr.kv_offset, j0, n, m, l);
            break;
          case 2:
            group_block<Level, 2>(a, k, v, gr.h0, gr.kv_offset, j0, n, m, l);
            break;
          case 3:
            group_block<Level, 3>(a, k, v, gr.h0, gr.kv_offset, j0, n, m, l);
            break;
          default:
            group_block<Level, 4>(a, k, v, gr.h0, gr.kv_offset, j0, n, m, l);
            break;
        }
      }
    }
    for (int64_t h = first; h < last; ++h) Level::finish_head(a, h, running_sum[h - first]);
    first = last;
  }
}

}  // namespace dancemoe::kernels::blocked_attention
