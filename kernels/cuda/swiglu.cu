#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace dancemoe::kernels::cuda {
namespace {

__global__ void swiglu_kernel(const float* gate, const float* up, int64_t n, float* out,
                              uint16_t* out_bf16) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = swiglu_value(gate[i], up[i]);
  if (out) out[i] = v;
  if (out_bf16) out_bf16[i] = float_to_bf16_bits(v);
}

}  // namespace

void swiglu(const float* gate, const float* up, int64_t n, float* out, uint16_t* out_bf16,
            Stream stream) {
  if (n == 0) return;
  swiglu_kernel<<<static_cast<unsigned>(ceil_div(n, 256)), 256, 0, stream>>>(gate, up, n, out,
                                                                             out_bf16);
}

}  // namespace dancemoe::kernels::cuda
