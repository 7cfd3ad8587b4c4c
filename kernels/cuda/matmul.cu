#include "kernels/cuda/gemv_util.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/mma_tile.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kGemvWarps = 8;
constexpr int kRowsPerWarp = 2;  // a block computes kGemvWarps * kRowsPerWarp rows

__device__ __forceinline__ void store_output(const MatmulProblem& p, int64_t t, int64_t r,
                                             float v) {
  if (p.bias) v += p.bias[r];
  float* y = p.y + t * p.y_stride + r;
  *y = p.accumulate ? *y + v : v;
}

// Each warp computes two adjacent output rows (kRowsPerWarp).
template <bool XF32, bool VEC>
__global__ void gemv_kernel(MatmulArgs a) {
  const MatmulProblem& p = a.problems[blockIdx.z];
  const int64_t r0 =
      (static_cast<int64_t>(blockIdx.x) * kGemvWarps + threadIdx.x / kWarp) * kRowsPerWarp;
  if (r0 >= p.rows) return;
  const bool second = r0 + 1 < p.rows;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kGemvTokens;
  const int n_tok = static_cast<int>(min64(kGemvTokens, a.n_tokens - t0));
  float acc[kRowsPerWarp][kGemvTokens] = {};
  const uint16_t* w[kRowsPerWarp] = {p.w + r0 * a.cols, p.w + (second ? r0 + 1 : r0) * a.cols};
  if constexpr (XF32) {
    const float* xr[kGemvTokens];
    for (int t = 0; t < kGemvTokens; ++t) xr[t] = a.x_f32 + (t0 + min64(t, n_tok - 1)) * a.x_stride;
    warp_dot_rows<VEC, kRowsPerWarp>(w, xr, n_tok, a.cols, acc);
  } else {
    const uint16_t* xr[kGemvTokens];
    for (int t = 0; t < kGemvTokens; ++t)
      xr[t] = a.x_bf16 + (t0 + min64(t, n_tok - 1)) * a.x_stride;
    warp_dot_rows<VEC, kRowsPerWarp>(w, xr, n_tok, a.cols, acc);
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int t = 0; t < kGemvTokens; ++t) acc[r][t] = warp_sum(acc[r][t]);
  if (threadIdx.x % kWarp == 0) {
#pragma unroll
    for (int t = 0; t < kGemvTokens; ++t) {
      if (t >= n_tok) continue;
      store_output(p, t0 + t, r0, acc[0][t]);
      if (second) store_output(p, t0 + t, r0 + 1, acc[1][t]);
    }
  }
}

__global__ void __launch_bounds__(kTileThreads) gemm_kernel(MatmulArgs a) {
  __shared__ __align__(16) TileSmem<1> sm;
  const MatmulProblem& p = a.problems[blockIdx.z];
  const int64_t n0 = static_cast<int64_t>(blockIdx.y) * kTileN;
  if (n0 >= p.rows) return;
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * kTileM;
  TileRows<1> rows;
  rows.safe = p.w;
  for (int i = 0; i < 2; ++i) {
    const int64_t m = m0 + tile_load_row(i);
    const int64_t n = n0 + tile_load_row(i);
    rows.a[i] = m < a.n_tokens ? a.x_bf16 + m * a.x_stride : nullptr;
    rows.b[0][i] = n < p.rows ? p.w + n * a.cols : nullptr;
  }
  TileAcc<1> acc;
  tile_mainloop<1>(sm, rows, a.cols, acc);
  tile_for_each<1>(acc, [&](int m, int n, float v) {
    const int64_t t = m0 + m;
    const int64_t r = n0 + n;
    if (t < a.n_tokens && r < p.rows) store_output(p, t, r, v);
  });
}

int64_t max_rows(const MatmulArgs& a) {
  int64_t rows = 0;
  for (int i = 0; i < a.n_problems; ++i) rows = max64(rows, a.problems[i].rows);
  return rows;
}

bool vec_ok(const MatmulArgs& a) {
  if (a.cols % 8 != 0 || a.x_stride % 8 != 0) return false;
  if (a.x_f32 ? !aligned16(a.x_f32) : !aligned16(a.x_bf16)) return false;
  for (int i = 0; i < a.n_problems; ++i) {
    if (!aligned16(a.problems[i].w)) return false;
  }
  return true;
}

}  // namespace

bool gemm_supported(const MatmulArgs& args) { return args.x_bf16 != nullptr && vec_ok(args); }

void gemv(const MatmulArgs& args, Stream stream) {
  if (args.n_tokens == 0 || args.n_problems == 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div(max_rows(args), kGemvWarps * kRowsPerWarp)),
                  static_cast<unsigned>(ceil_div(args.n_tokens, kGemvTokens)),
                  static_cast<unsigned>(args.n_problems));
  const bool vec = vec_ok(args);
  const int threads = kGemvWarps * kWarp;
  if (args.x_f32) {
    if (vec) {
      gemv_kernel<true, true><<<grid, threads, 0, stream>>>(args);
    } else {
      gemv_kernel<true, false><<<grid, threads, 0, stream>>>(args);
    }
  } else {
    if (vec) {
      gemv_kernel<false, true><<<grid, threads, 0, stream>>>(args);
    } else {
      gemv_kernel<false, false><<<grid, threads, 0, stream>>>(args);
    }
  }
}

void gemm(const MatmulArgs& args, Stream stream) {
  if (args.n_tokens == 0 || args.n_problems == 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div(args.n_tokens, kTileM)),
                  static_cast<unsigned>(ceil_div(max_rows(args), kTileN)),
                  static_cast<unsigned>(args.n_problems));
  gemm_kernel<<<grid, kTileThreads, 0, stream>>>(args);
}

void matmul(const MatmulArgs& args, Stream stream) {
  if (args.n_tokens > kGemvMaxTokens && gemm_supported(args)) {
    gemm(args, stream);
  } else {
    gemv(args, stream);
  }
}

}  // namespace dancemoe::kernels::cuda
