// The tensor-core main loop shared by the dense and the grouped-expert
// GEMMs (matmul.cu, expert_ffn.cu). Device code only.
//
// C[m, n] = sum_k A[m, k] * B[n, k] for one 64 x 64 output tile: A rows are
// activations (tokens), B rows are weight rows (HF Linear layout [out, in]),
// both bf16 with K contiguous; f32 accumulation. 128 threads = 4 warps in a
// 2 x 2 arrangement, each owning 32 x 32 outputs as 2 x 4 mma.m16n8k16
// tiles. K advances 32 at a time through a two-stage cp.async pipeline; each
// thread stages two 16-byte chunks of A and of every B per stage, so K must
// be a multiple of 8 (rows 16-byte aligned). Rows the caller marks null
// (past the end of M or N) are zero-filled and their outputs never stored.
// NB B operands share one A: the expert gate and up projections are computed
// together so that SwiGLU is applied in the epilogue.
#pragma once

#include "kernels/cuda/device_util.cuh"

namespace dancemoe::kernels::cuda {

constexpr int kTileM = 64;
constexpr int kTileN = 64;
constexpr int kTileK = 32;
constexpr int kTileThreads = 128;
constexpr int kSmemStride = kTileK + 8;  // halves; 80-byte rows keep ldmatrix conflict-free

template <int NB>
struct TileSmem {
  uint16_t a[2][kTileM][kSmemStride];
  uint16_t b[2][NB][kTileN][kSmemStride];
};

// acc[nb][mi][ni][r]: warp tile rows mi * 16 (+8 for r >= 2) + lane / 4,
// cols ni * 8 + (lane % 4) * 2 (+1 for odd r).
template <int NB>
using TileAcc = float[NB][2][4][4];

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src),
               "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The rows this thread stages: a[i] is tile row tile_load_row(i) of A,
// null when out of range; b[nb][i] likewise for B operand nb. Each pointer
// is the start of its row (k = 0).
template <int NB>
struct TileRows {
  const uint16_t* a[2];
  const uint16_t* b[NB][2];
  const uint16_t* safe;  // any valid global address, given to zero-filled copies
};

template <int NB>
__device__ __forceinline__ void tile_mainloop(TileSmem<NB>& sm, const TileRows<NB>& rows,
                                              int64_t k_total, TileAcc<NB>& acc) {
  const int tid = threadIdx.x;
  const int warp = tid / kWarp;
  const int lane = tid % kWarp;
  const int warp_m = warp / 2;
  const int warp_n = warp % 2;
  const int load_row = tid / 4;
  const int load_k = (tid % 4) * 8;
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[nb][mi][ni][r] = 0.0f;

  const int64_t n_k_tiles = ceil_div(k_total, kTileK);
  const uint16_t* fallback = rows.safe;
  auto load_stage = [&](int stage, int64_t kt) {
    const int64_t k = kt * kTileK + load_k;
    const bool k_ok = k < k_total;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const bool ok = k_ok && rows.a[i] != nullptr;
      cp_async16(&sm.a[stage][load_row + 32 * i][load_k], ok ? rows.a[i] + k : fallback, ok);
    }
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const bool ok = k_ok && rows.b[nb][i] != nullptr;
        cp_async16(&sm.b[stage][nb][load_row + 32 * i][load_k], ok ? rows.b[nb][i] + k : fallback,
                   ok);
      }
    }
    cp_async_commit();
  };

  load_stage(0, 0);
  for (int64_t kt = 0; kt < n_k_tiles; ++kt) {
    const int stage = static_cast<int>(kt % 2);
    if (kt + 1 < n_k_tiles) {
      load_stage(1 - stage, kt + 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < kTileK; ks += 16) {
      uint32_t a_frag[2][4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const int row = warp_m * 32 + mi * 16 + (lane % 16);
        const int col = ks + (lane / 16) * 8;
        ldmatrix_x4(a_frag[mi], &sm.a[stage][row][col]);
      }
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          uint32_t b_frag[4];
          const int row = warp_n * 32 + p * 16 + (lane % 8) + (lane / 16) * 8;
          const int col = ks + ((lane / 8) % 2) * 8;
          ldmatrix_x4(b_frag, &sm.b[stage][nb][row][col]);
#pragma unroll
          for (int mi = 0; mi < 2; ++mi) {
            mma_bf16(acc[nb][mi][2 * p], a_frag[mi], b_frag[0], b_frag[1]);
            mma_bf16(acc[nb][mi][2 * p + 1], a_frag[mi], b_frag[2], b_frag[3]);
          }
        }
      }
    }
    __syncthreads();  // the stage is overwritten by the next iteration's load
  }
}

// Calls f(m, n, v...) for every output element this thread holds, with the
// tile-relative row m and column n.
template <int NB, class F>
__device__ __forceinline__ void tile_for_each(const TileAcc<NB>& acc, F f) {
  const int warp = threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  const int warp_m = warp / 2;
  const int warp_n = warp % 2;
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int m = warp_m * 32 + mi * 16 + lane / 4 + (r >= 2 ? 8 : 0);
        const int n = warp_n * 32 + ni * 8 + (lane % 4) * 2 + (r % 2);
        if constexpr (NB == 1) {
          f(m, n, acc[0][mi][ni][r]);
        } else {
          f(m, n, acc[0][mi][ni][r], acc[1][mi][ni][r]);
        }
      }
}

// This thread's two staged A / B rows within a tile (see tile_mainloop).
__device__ __forceinline__ int tile_load_row(int i) {
  return static_cast<int>(threadIdx.x) / 4 + 32 * i;
}

}  // namespace dancemoe::kernels::cuda
