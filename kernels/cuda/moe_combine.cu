#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/moe_combine.cuh"

namespace dancemoe::kernels::cuda {
namespace {

__global__ void combine_kernel(CombineArgs a) {
  const int64_t t = blockIdx.y;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= a.hidden) return;
  const int64_t begin = a.token_start ? a.token_start[t] : t * a.top_k;
  const int64_t end = a.token_start ? a.token_start[t + 1] : (t + 1) * a.top_k;
  float* out = a.out + t * a.out_stride + c;
  float acc = *out;
  for (int64_t e = begin; e < end; ++e) {
    const float w = a.weights ? a.weights[e] : 1.0f;
    const int64_t row = a.pos ? a.pos[e] : e;
    acc = fmaf(w, a.d[row * a.hidden + c], acc);
  }
  *out = acc;
}

}  // namespace

void moe_combine(const CombineArgs& args, Stream stream) {
  if (args.n_tokens == 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div(args.hidden, 256)),
                  static_cast<unsigned>(args.n_tokens));
  combine_kernel<<<grid, 256, 0, stream>>>(args);
}

}  // namespace dancemoe::kernels::cuda
