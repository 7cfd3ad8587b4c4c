#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/rmsnorm.cuh"

namespace dancemoe::kernels::cuda {
namespace {

// Narrow rows (per-head norms): one warp per row.
__global__ void rmsnorm_warp_kernel(RmsNormArgs a) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= a.n_rows) return;
  const float* x = a.x + row * a.x_stride;
  float ss = 0.0f;
  for (int64_t c = lane; c < a.width; c += kWarp) ss = fmaf(x[c], x[c], ss);
  ss = warp_sum(ss);
  const float inv_rms = 1.0f / sqrtf(ss / static_cast<float>(a.width) + a.eps);
  float* out = a.out + row * a.out_stride;
  uint16_t* out_bf16 = a.out_bf16 ? a.out_bf16 + row * a.out_bf16_stride : nullptr;
  for (int64_t c = lane; c < a.width; c += kWarp) {
    const float v = x[c] * inv_rms * a.weight[c];
    out[c] = v;
    if (out_bf16) out_bf16[c] = float_to_bf16_bits(v);
  }
}

// Wide rows (the hidden state): one block per row.
__global__ void rmsnorm_block_kernel(RmsNormArgs a) {
  __shared__ float scratch[kWarp];
  const int64_t row = blockIdx.x;
  const float* x = a.x + row * a.x_stride;
  float ss = 0.0f;
  for (int64_t c = threadIdx.x; c < a.width; c += blockDim.x) ss = fmaf(x[c], x[c], ss);
  ss = block_sum(ss, scratch);
  const float inv_rms = 1.0f / sqrtf(ss / static_cast<float>(a.width) + a.eps);
  float* out = a.out + row * a.out_stride;
  uint16_t* out_bf16 = a.out_bf16 ? a.out_bf16 + row * a.out_bf16_stride : nullptr;
  for (int64_t c = threadIdx.x; c < a.width; c += blockDim.x) {
    const float v = x[c] * inv_rms * a.weight[c];
    out[c] = v;
    if (out_bf16) out_bf16[c] = float_to_bf16_bits(v);
  }
}

}  // namespace

void rmsnorm(const RmsNormArgs& args, Stream stream) {
  if (args.n_rows == 0) return;
  if (args.width <= 256) {
    constexpr int kRowsPerBlock = 4;
    rmsnorm_warp_kernel<<<static_cast<unsigned>(ceil_div(args.n_rows, kRowsPerBlock)),
                          kRowsPerBlock * kWarp, 0, stream>>>(args);
  } else {
    rmsnorm_block_kernel<<<static_cast<unsigned>(args.n_rows), 256, 0, stream>>>(args);
  }
}

}  // namespace dancemoe::kernels::cuda
