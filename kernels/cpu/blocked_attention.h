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
// A level supplies the arithmetic as a type in its own anonymous namespace
// (so every instantiation here has internal linkage and no SIMD code can
// become a program-wide symbol):
//   template <int G, class E> static void group_block(const AttentionArgs& a,
//       const E* k, const E* v, int64_t h0, int64_t kv_offset, int64_t j0,
//       int64_t n, float* running_max, float* running_sum);
//     positions [j0, j0 + n) (n <= kBlock) of the G heads [h0, h0 + G) whose
//     KV columns start at kv_offset: scores, the softmax update, the values
//   static void finish_head(const AttentionArgs& a, int64_t h, float sum);
//     out[h] /= sum (0 when sum is 0: no positions)
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
            Level::template group_block<1>(a, k, v, gr.h0, gr.kv_offset, j0, n, m, l);
            break;
          case 2:
            Level::template group_block<2>(a, k, v, gr.h0, gr.kv_offset, j0, n, m, l);
            break;
          case 3:
            Level::template group_block<3>(a, k, v, gr.h0, gr.kv_offset, j0, n, m, l);
            break;
          default:
            Level::template group_block<4>(a, k, v, gr.h0, gr.kv_offset, j0, n, m, l);
            break;
        }
      }
    }
    for (int64_t h = first; h < last; ++h) Level::finish_head(a, h, running_sum[h - first]);
    first = last;
  }
}

}  // namespace dancemoe::kernels::blocked_attention
