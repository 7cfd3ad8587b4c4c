// Warp-level dot products of one bf16 weight row with up to 4 activation
// rows, for the GEMV kernels (matmul.cu, expert_ffn.cu). Device code only.
// VEC: 16-byte loads, 4 per lane in flight per pass (cols % 8 == 0 and rows
// 16-byte aligned); otherwise scalar loads for any size. Every lane returns
// partial sums; reduce with warp_sum.
#pragma once

#include "kernels/cuda/device_util.cuh"

namespace dancemoe::kernels::cuda {

constexpr int kGemvTokens = 4;
constexpr int kGemvUnroll = 4;

// acc[r][t] += W_r . x_t for R weight rows sharing the activations. All
// R * kGemvUnroll weight loads of a pass are issued before the first FMA, so
// a warp keeps R * 2 KiB of weights in flight (the GEMVs are latency bound
// at the sizes of one expert).
template <bool VEC, int R, class X>
__device__ __forceinline__ void warp_dot_rows(const uint16_t* const w[R],
                                              const X* const xr[kGemvTokens], int n_tok,
                                              int64_t cols, float acc[R][kGemvTokens]) {
  const int lane = threadIdx.x % kWarp;
  if constexpr (VEC) {
    constexpr int64_t kStep = kWarp * 8;
    for (int64_t base = 0; base < cols; base += kStep * kGemvUnroll) {
      uint4 wv[R][kGemvUnroll];
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) {
        const int64_t c = base + u * kStep + lane * 8;
#pragma unroll
        for (int r = 0; r < R; ++r)
          wv[r][u] = c < cols ? load_stream16(w[r] + c) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kGemvUnroll; ++u) {
        const int64_t c = base + u * kStep + lane * 8;
        if (c >= cols) continue;
#pragma unroll
        for (int t = 0; t < kGemvTokens; ++t) {
          if (t >= n_tok) continue;
          if constexpr (sizeof(X) == 2) {
            const uint4 xv = *reinterpret_cast<const uint4*>(xr[t] + c);
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r][t] = dot8_bf16(wv[r][u], xv, acc[r][t]);
          } else {
            const float4* xp = reinterpret_cast<const float4*>(xr[t] + c);
            const float4 x0 = xp[0];
            const float4 x1 = xp[1];
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r][t] = dot8_f32(wv[r][u], x0, x1, acc[r][t]);
          }
        }
      }
    }
  } else {
    for (int64_t c = lane; c < cols; c += kWarp) {
#pragma unroll
      for (int t = 0; t < kGemvTokens; ++t) {
        if (t >= n_tok) continue;
        float xf;
        if constexpr (sizeof(X) == 2) {
          xf = bf16_bits_to_float(xr[t][c]);
        } else {
          xf = xr[t][c];
        }
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r][t] = fmaf(bf16_bits_to_float(w[r][c]), xf, acc[r][t]);
      }
    }
  }
}

__host__ __device__ inline bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

}  // namespace dancemoe::kernels::cuda
