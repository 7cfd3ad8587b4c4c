#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/matmul_quant.cuh"
#include "kernels/cuda/quant_blocks.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kTokensPerPass = 4;

template <WeightType kType, bool XF32>
__global__ void gemv_quant_kernel(QuantMatmulArgs a) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarp;
  if (r >= a.rows) return;
  const int lane = threadIdx.x % kWarp;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTokensPerPass;
  const int n_tok = static_cast<int>(min64(kTokensPerPass, a.n_tokens - t0));
  const int64_t row_bytes = a.cols / quant_block_values(kType) * quant_block_bytes(kType);
  const uint8_t* row = static_cast<const uint8_t*>(a.w) + r * row_bytes;
  float acc[kTokensPerPass] = {};
  for (int64_t g = lane; g < a.cols / 32; g += kWarp) {
    float v[32];
    dequant_group<kType>(row, g, v);
#pragma unroll
    for (int t = 0; t < kTokensPerPass; ++t) {
      if (t >= n_tok) continue;
      const int64_t base = (t0 + t) * a.x_stride + g * 32;
#pragma unroll
      for (int k = 0; k < 32; ++k) {
        const float x = XF32 ? a.x_f32[base + k] : bf16_bits_to_float(a.x_bf16[base + k]);
        acc[t] = fmaf(v[k], x, acc[t]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kTokensPerPass; ++t) acc[t] = warp_sum(acc[t]);
  if (lane == 0) {
    for (int t = 0; t < n_tok; ++t) {
      float* y = a.y + (t0 + t) * a.y_stride + r;
      *y = a.accumulate ? *y + acc[t] : acc[t];
    }
  }
}

template <WeightType kType>
void launch_gemv(const QuantMatmulArgs& a, Stream stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(a.rows, kWarpsPerBlock)),
                  static_cast<unsigned>(ceil_div(a.n_tokens, kTokensPerPass)));
  const int threads = kWarpsPerBlock * kWarp;
  if (a.x_f32) {
    gemv_quant_kernel<kType, true><<<grid, threads, 0, stream>>>(a);
  } else {
    gemv_quant_kernel<kType, false><<<grid, threads, 0, stream>>>(a);
  }
}

}  // namespace

bool gemv_quant(const QuantMatmulArgs& args, Stream stream) {
  if (!is_device_block_type(args.type)) return false;
  if (args.n_tokens == 0 || args.rows == 0) return true;
  switch (args.type) {
    case WeightType::kQ8_0:
      launch_gemv<WeightType::kQ8_0>(args, stream);
      return true;
    case WeightType::kQ4_0:
      launch_gemv<WeightType::kQ4_0>(args, stream);
      return true;
    case WeightType::kQ4_K:
      launch_gemv<WeightType::kQ4_K>(args, stream);
      return true;
    case WeightType::kQ5_K:
      launch_gemv<WeightType::kQ5_K>(args, stream);
      return true;
    case WeightType::kQ6_K:
      launch_gemv<WeightType::kQ6_K>(args, stream);
      return true;
    case WeightType::kMXFP4:
      launch_gemv<WeightType::kMXFP4>(args, stream);
      return true;
    default:
      return false;
  }
}

bool matmul_quant(const QuantMatmulArgs& args, uint16_t* scratch_bf16, Stream stream) {
  if (args.n_tokens <= kGemvMaxTokens || args.x_bf16 == nullptr || scratch_bf16 == nullptr) {
    return gemv_quant(args, stream);
  }
  if (!dequantize_bf16(args.type, args.w, args.rows, args.cols, scratch_bf16, args.cols, stream)) {
    return false;
  }
  MatmulArgs m;
  m.x_bf16 = args.x_bf16;
  m.x_stride = args.x_stride;
  m.n_tokens = args.n_tokens;
  m.cols = args.cols;
  m.problems[0].w = scratch_bf16;
  m.problems[0].rows = args.rows;
  m.problems[0].y = args.y;
  m.problems[0].y_stride = args.y_stride;
  m.problems[0].accumulate = args.accumulate;
  m.n_problems = 1;
  matmul(m, stream);
  return true;
}

}  // namespace dancemoe::kernels::cuda
