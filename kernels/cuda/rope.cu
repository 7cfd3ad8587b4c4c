#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/rope.cuh"

namespace dancemoe::kernels::cuda {
namespace {

__global__ void rope_tables_kernel(const double* inv_freq, int64_t half, const int32_t* d_pos0,
                                   int64_t n_tokens, float* cos_out, float* sin_out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_tokens * half) return;
  const int64_t t = i / half;
  const double angle = static_cast<double>(*d_pos0 + t) * inv_freq[i % half];
  cos_out[i] = static_cast<float>(cos(angle));
  sin_out[i] = static_cast<float>(sin(angle));
}

__global__ void rope_kernel(float* x, int64_t row_stride, int64_t n_heads, int64_t head_dim,
                            const float* cos_t, const float* sin_t) {
  const int64_t t = blockIdx.y;
  const int64_t half = head_dim / 2;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_heads * half) return;
  const int64_t h = i / half;
  const int64_t j = i % half;
  float* xh = x + t * row_stride + h * head_dim;
  const float c = cos_t[t * half + j];
  const float s = sin_t[t * half + j];
  const float a = xh[j];
  const float b = xh[j + half];
  xh[j] = a * c - b * s;
  xh[j + half] = b * c + a * s;
}

}  // namespace

void rope_tables(const double* inv_freq, int64_t half, const int32_t* d_pos0, int64_t n_tokens,
                 float* cos, float* sin, Stream stream) {
  const int64_t n = n_tokens * half;
  if (n == 0) return;
  rope_tables_kernel<<<static_cast<unsigned>(ceil_div(n, 256)), 256, 0, stream>>>(
      inv_freq, half, d_pos0, n_tokens, cos, sin);
}

void rope(float* x, int64_t n_tokens, int64_t row_stride, int64_t n_heads, int64_t head_dim,
          const float* cos, const float* sin, Stream stream) {
  const int64_t n = n_heads * (head_dim / 2);
  if (n == 0 || n_tokens == 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div(n, 128)), static_cast<unsigned>(n_tokens));
  rope_kernel<<<grid, 128, 0, stream>>>(x, row_stride, n_heads, head_dim, cos, sin);
}

}  // namespace dancemoe::kernels::cuda
