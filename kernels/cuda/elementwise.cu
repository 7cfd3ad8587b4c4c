#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/elementwise.cuh"

namespace dancemoe::kernels::cuda {
namespace {

__global__ void axpy_kernel(float a, const float* x, float* y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaf(a, x[i], y[i]);
}

__global__ void f32_to_bf16_kernel(const float* in, int64_t n, uint16_t* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = float_to_bf16_bits(in[i]);
}

__global__ void bf16_to_f32_kernel(const uint16_t* in, int64_t n, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = bf16_bits_to_float(in[i]);
}

__global__ void sigmoid_kernel(float* x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 1.0f / (1.0f + expf(-x[i]));
}

unsigned blocks(int64_t n) { return static_cast<unsigned>(ceil_div(n, 256)); }

}  // namespace

void axpy(float a, const float* x, float* y, int64_t n, Stream stream) {
  if (n > 0) axpy_kernel<<<blocks(n), 256, 0, stream>>>(a, x, y, n);
}

void f32_to_bf16(const float* in, int64_t n, uint16_t* out, Stream stream) {
  if (n > 0) f32_to_bf16_kernel<<<blocks(n), 256, 0, stream>>>(in, n, out);
}

void bf16_to_f32(const uint16_t* in, int64_t n, float* out, Stream stream) {
  if (n > 0) bf16_to_f32_kernel<<<blocks(n), 256, 0, stream>>>(in, n, out);
}

void sigmoid(float* x, int64_t n, Stream stream) {
  if (n > 0) sigmoid_kernel<<<blocks(n), 256, 0, stream>>>(x, n);
}

}  // namespace dancemoe::kernels::cuda
