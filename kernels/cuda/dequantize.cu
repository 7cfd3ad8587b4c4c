#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/quant_blocks.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per group of 32 values.
template <WeightType kType>
__global__ void dequantize_kernel(const uint8_t* w, int64_t rows, int64_t cols, uint16_t* out,
                                  int64_t out_stride) {
  const int64_t groups_per_row = cols / 32;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * groups_per_row) return;
  const int64_t r = i / groups_per_row;
  const int64_t g = i % groups_per_row;
  const int64_t row_bytes = cols / quant_block_values(kType) * quant_block_bytes(kType);
  float v[32];
  dequant_group<kType>(w + r * row_bytes, g, v);
  uint16_t* dst = out + r * out_stride + g * 32;
#pragma unroll
  for (int k = 0; k < 32; ++k) dst[k] = float_to_bf16_bits(v[k]);
}

template <WeightType kType>
void launch(const void* w, int64_t rows, int64_t cols, uint16_t* out, int64_t out_stride,
            Stream stream) {
  const int64_t n = rows * (cols / 32);
  const unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  dequantize_kernel<kType><<<blocks, kThreads, 0, stream>>>(static_cast<const uint8_t*>(w), rows,
                                                            cols, out, out_stride);
}

}  // namespace

bool dequantize_bf16(WeightType type, const void* w, int64_t rows, int64_t cols, uint16_t* out,
                     int64_t out_stride, Stream stream) {
  if (!is_device_block_type(type)) return false;
  if (rows == 0 || cols == 0) return true;
  switch (type) {
    case WeightType::kQ8_0:
      launch<WeightType::kQ8_0>(w, rows, cols, out, out_stride, stream);
      return true;
    case WeightType::kQ4_0:
      launch<WeightType::kQ4_0>(w, rows, cols, out, out_stride, stream);
      return true;
    case WeightType::kQ4_K:
      launch<WeightType::kQ4_K>(w, rows, cols, out, out_stride, stream);
      return true;
    case WeightType::kQ5_K:
      launch<WeightType::kQ5_K>(w, rows, cols, out, out_stride, stream);
      return true;
    case WeightType::kQ6_K:
      launch<WeightType::kQ6_K>(w, rows, cols, out, out_stride, stream);
      return true;
    case WeightType::kMXFP4:
      launch<WeightType::kMXFP4>(w, rows, cols, out, out_stride, stream);
      return true;
    default:
      return false;
  }
}

}  // namespace dancemoe::kernels::cuda
