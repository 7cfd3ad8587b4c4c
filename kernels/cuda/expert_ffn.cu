#include "kernels/cuda/expert_ffn.cuh"
#include "kernels/cuda/gemv_util.cuh"
#include "kernels/cuda/mma_tile.cuh"
#include "kernels/cuda/moe_group.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kGemvWarps = 8;

// Row of x of (sorted, or direct) pair p.
__device__ __forceinline__ int64_t token_of(const ExpertFfnArgs& a, int64_t p) {
  return a.direct ? p / a.direct_top_k : a.pair_token[p];
}

// The pairs this GEMV block serves: [p, p + n_tok) of group g, or none.
struct PairRun {
  int64_t p = 0;
  int g = 0;
  int n_tok = 0;
};

__device__ __forceinline__ PairRun pair_run(const ExpertFfnArgs& a) {
  PairRun run;
  const int64_t p = blockIdx.y;
  if (a.direct) {  // ungrouped: every pair is its own run
    run.p = p;
    run.g = a.direct_ids ? a.direct_ids[p] : 0;
    run.n_tok = 1;
    return run;
  }
  if (p >= a.group_offsets[a.n_groups]) return run;
  const int g = a.pair_group[p];
  const int64_t start = a.group_offsets[g];
  if ((p - start) % kGemvTokens != 0) return run;  // served by the run's first block
  run.p = p;
  run.g = g;
  run.n_tok = static_cast<int>(min64(kGemvTokens, a.group_offsets[g + 1] - p));
  return run;
}

// The activation of column `col` of group g from the gate and up products,
// with the group's biases when it has them.
__device__ __forceinline__ float activation(const ExpertFfnArgs& a, int g, int64_t col, float gate,
                                            float up) {
  if (a.gate_bias != nullptr && a.gate_bias[g] != nullptr) gate += a.gate_bias[g][col];
  if (a.up_bias != nullptr && a.up_bias[g] != nullptr) up += a.up_bias[g][col];
  return a.clamped ? clamped_swiglu_value(gate, up, a.alpha, a.limit) : swiglu_value(gate, up);
}

// Group g's down-projection bias of output column `col` (0 without one).
__device__ __forceinline__ float down_bias(const ExpertFfnArgs& a, int g, int64_t col) {
  return a.down_bias != nullptr && a.down_bias[g] != nullptr ? a.down_bias[g][col] : 0.0f;
}

template <bool VEC>
__global__ void gate_up_gemv_kernel(ExpertFfnArgs a) {
  const PairRun run = pair_run(a);
  if (run.n_tok == 0 || a.gate[run.g] == nullptr) return;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / kWarp;
  if (r >= a.inter) return;
  const uint16_t* xr[kGemvTokens];
  for (int t = 0; t < kGemvTokens; ++t) {
    xr[t] = a.x + token_of(a, run.p + min(t, run.n_tok - 1)) * a.x_stride;
  }
  // Gate and up rows r stream together.
  const uint16_t* w[2] = {a.gate[run.g] + r * a.hidden, a.up[run.g] + r * a.hidden};
  float acc[2][kGemvTokens] = {};
  warp_dot_rows<VEC, 2>(w, xr, run.n_tok, a.hidden, acc);
#pragma unroll
  for (int t = 0; t < kGemvTokens; ++t) {
    acc[0][t] = warp_sum(acc[0][t]);
    acc[1][t] = warp_sum(acc[1][t]);
  }
  if (threadIdx.x % kWarp == 0) {
#pragma unroll
    for (int t = 0; t < kGemvTokens; ++t) {
      if (t < run.n_tok) {
        a.h[(run.p + t) * a.inter + r] =
            float_to_bf16_bits(activation(a, run.g, r, acc[0][t], acc[1][t]));
      }
    }
  }
}

// Each warp computes two adjacent rows of the down projection.
template <bool VEC>
__global__ void down_gemv_kernel(ExpertFfnArgs a) {
  const PairRun run = pair_run(a);
  if (run.n_tok == 0 || a.down[run.g] == nullptr) return;
  const int64_t r0 = (static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / kWarp) * 2;
  if (r0 >= a.hidden) return;
  const bool second = r0 + 1 < a.hidden;
  const uint16_t* xr[kGemvTokens];
  for (int t = 0; t < kGemvTokens; ++t) xr[t] = a.h + (run.p + min(t, run.n_tok - 1)) * a.inter;
  const uint16_t* down = a.down[run.g];
  const uint16_t* w[2] = {down + r0 * a.inter, down + (second ? r0 + 1 : r0) * a.inter};
  float acc[2][kGemvTokens] = {};
  warp_dot_rows<VEC, 2>(w, xr, run.n_tok, a.inter, acc);
#pragma unroll
  for (int t = 0; t < kGemvTokens; ++t) {
    acc[0][t] = warp_sum(acc[0][t]);
    acc[1][t] = warp_sum(acc[1][t]);
  }
  if (threadIdx.x % kWarp == 0) {
#pragma unroll
    for (int t = 0; t < kGemvTokens; ++t) {
      if (t >= run.n_tok) continue;
      a.d[(run.p + t) * a.hidden + r0] = acc[0][t] + down_bias(a, run.g, r0);
      if (second) a.d[(run.p + t) * a.hidden + r0 + 1] = acc[1][t] + down_bias(a, run.g, r0 + 1);
    }
  }
}

// The work-list tile of this block: sorted pairs [row0, end) of group g.
struct Tile {
  bool valid = false;
  int g = 0;
  int64_t row0 = 0;
  int64_t end = 0;
};

__device__ __forceinline__ Tile work_tile(const ExpertFfnArgs& a) {
  Tile tile;
  if (static_cast<int64_t>(blockIdx.x) >= a.n_tiles[0]) return tile;
  tile.g = a.tile_group[blockIdx.x];
  tile.row0 = a.tile_row0[blockIdx.x];
  tile.end = a.group_offsets[tile.g + 1];
  tile.valid = true;
  return tile;
}

__global__ void __launch_bounds__(kTileThreads) gate_up_gemm_kernel(ExpertFfnArgs a) {
  __shared__ __align__(16) TileSmem<2> sm;
  const Tile tile = work_tile(a);
  if (!tile.valid || a.gate[tile.g] == nullptr) return;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * kTileN;
  const uint16_t* gate = a.gate[tile.g];
  const uint16_t* up = a.up[tile.g];
  TileRows<2> rows;
  rows.safe = gate;
  for (int i = 0; i < 2; ++i) {
    const int64_t p = tile.row0 + tile_load_row(i);
    const int64_t n = n0 + tile_load_row(i);
    rows.a[i] = p < tile.end ? a.x + static_cast<int64_t>(a.pair_token[p]) * a.x_stride : nullptr;
    rows.b[0][i] = n < a.inter ? gate + n * a.hidden : nullptr;
    rows.b[1][i] = n < a.inter ? up + n * a.hidden : nullptr;
  }
  TileAcc<2> acc;
  tile_mainloop<2>(sm, rows, a.hidden, acc);
  tile_for_each<2>(acc, [&](int m, int n, float g, float u) {
    const int64_t p = tile.row0 + m;
    const int64_t col = n0 + n;
    if (p < tile.end && col < a.inter)
      a.h[p * a.inter + col] = float_to_bf16_bits(activation(a, tile.g, col, g, u));
  });
}

__global__ void __launch_bounds__(kTileThreads) down_gemm_kernel(ExpertFfnArgs a) {
  __shared__ __align__(16) TileSmem<1> sm;
  const Tile tile = work_tile(a);
  if (!tile.valid || a.down[tile.g] == nullptr) return;
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * kTileN;
  const uint16_t* down = a.down[tile.g];
  TileRows<1> rows;
  rows.safe = down;
  for (int i = 0; i < 2; ++i) {
    const int64_t p = tile.row0 + tile_load_row(i);
    const int64_t n = n0 + tile_load_row(i);
    rows.a[i] = p < tile.end ? a.h + p * a.inter : nullptr;
    rows.b[0][i] = n < a.hidden ? down + n * a.inter : nullptr;
  }
  TileAcc<1> acc;
  tile_mainloop<1>(sm, rows, a.inter, acc);
  tile_for_each<1>(acc, [&](int m, int n, float v) {
    const int64_t p = tile.row0 + m;
    const int64_t col = n0 + n;
    if (p < tile.end && col < a.hidden) a.d[p * a.hidden + col] = v + down_bias(a, tile.g, col);
  });
}

bool gemv_vec_ok(const ExpertFfnArgs& a) {
  // Weight pointers come from the device allocator (256-byte aligned) plus
  // whole rows; the activations are checked here.
  return a.hidden % 8 == 0 && a.inter % 8 == 0 && a.x_stride % 8 == 0 && aligned16(a.x) &&
         aligned16(a.h);
}

}  // namespace

bool expert_gemm_supported(const ExpertFfnArgs& args) { return gemv_vec_ok(args); }

void expert_gate_up_gemv(const ExpertFfnArgs& args, Stream stream) {
  if (args.max_pairs == 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div(args.inter, kGemvWarps)),
                  static_cast<unsigned>(args.max_pairs));
  if (gemv_vec_ok(args)) {
    gate_up_gemv_kernel<true><<<grid, kGemvWarps * kWarp, 0, stream>>>(args);
  } else {
    gate_up_gemv_kernel<false><<<grid, kGemvWarps * kWarp, 0, stream>>>(args);
  }
}

void expert_down_gemv(const ExpertFfnArgs& args, Stream stream) {
  if (args.max_pairs == 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div(args.hidden, kGemvWarps * 2)),
                  static_cast<unsigned>(args.max_pairs));
  if (gemv_vec_ok(args)) {
    down_gemv_kernel<true><<<grid, kGemvWarps * kWarp, 0, stream>>>(args);
  } else {
    down_gemv_kernel<false><<<grid, kGemvWarps * kWarp, 0, stream>>>(args);
  }
}

void expert_gate_up_gemm(const ExpertFfnArgs& args, Stream stream) {
  if (args.max_pairs == 0) return;
  const dim3 grid(static_cast<unsigned>(max_expert_tiles(args.max_pairs, args.n_groups)),
                  static_cast<unsigned>(ceil_div(args.inter, kTileN)));
  gate_up_gemm_kernel<<<grid, kTileThreads, 0, stream>>>(args);
}

void expert_down_gemm(const ExpertFfnArgs& args, Stream stream) {
  if (args.max_pairs == 0) return;
  const dim3 grid(static_cast<unsigned>(max_expert_tiles(args.max_pairs, args.n_groups)),
                  static_cast<unsigned>(ceil_div(args.hidden, kTileN)));
  down_gemm_kernel<<<grid, kTileThreads, 0, stream>>>(args);
}

void expert_ffn(const ExpertFfnArgs& args, bool batched, Stream stream) {
  if (batched && !args.direct && expert_gemm_supported(args)) {
    expert_gate_up_gemm(args, stream);
    expert_down_gemm(args, stream);
  } else {
    expert_gate_up_gemv(args, stream);
    expert_down_gemv(args, stream);
  }
}

}  // namespace dancemoe::kernels::cuda
