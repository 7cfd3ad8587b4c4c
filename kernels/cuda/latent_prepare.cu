#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/latent_prepare.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kThreads = 128;

// Rotates the r values of x (pairs or halves, see the header) into out:
// out[i] and out[i + r/2] for i < r/2. x and out must not overlap.
__device__ __forceinline__ void rotate(const float* x, int64_t r, bool pairs, const float* cos_t,
                                       const float* sin_t, float scale, float* out) {
  const int64_t half = r / 2;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const float x0 = x[pairs ? 2 * i : i];
    const float x1 = x[pairs ? 2 * i + 1 : i + half];
    const float c = cos_t[i] * scale;
    const float s = sin_t[i] * scale;
    out[i] = x0 * c - x1 * s;
    out[i + half] = x1 * c + x0 * s;
  }
}

// One block per (slot, token): slots [0, n_heads) rotate a query head's
// rope part in place (staged in shared memory: the pairs layout moves values
// between threads); slot n_heads writes the token's cache row.
__global__ void latent_prepare_kernel(LatentPrepareArgs a) {
  __shared__ float scratch[kWarp];
  __shared__ float head[kMaxHeadDim];
  const int64_t t = blockIdx.y;
  const int64_t slot = blockIdx.x;
  const int64_t half = a.rope / 2;
  const float* cos_t = a.cos + t * half;
  const float* sin_t = a.sin + t * half;
  if (slot < a.n_heads) {  // block-uniform: the barrier below is reached by all
    float* x = a.q + t * a.q_stride + slot * (a.nope + a.rope) + a.nope;
    rotate(x, a.rope, a.pairs, cos_t, sin_t, a.rope_scale, head);
    __syncthreads();
    for (int64_t i = threadIdx.x; i < a.rope; i += blockDim.x) x[i] = head[i];
    return;
  }
  const float* kv = a.kv + t * a.kv_stride;
  float* dst = a.cache + (*a.d_pos0 + t) * (a.rank + a.rope);
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < a.rank; i += blockDim.x) ss = fmaf(kv[i], kv[i], ss);
  ss = block_sum(ss, scratch);
  const float inv_rms = 1.0f / sqrtf(ss / static_cast<float>(a.rank) + a.eps);
  for (int64_t i = threadIdx.x; i < a.rank; i += blockDim.x) dst[i] = kv[i] * inv_rms * a.norm[i];
  rotate(kv + a.rank, a.rope, a.pairs, cos_t, sin_t, a.rope_scale, dst + a.rank);
}

}  // namespace

void latent_prepare(const LatentPrepareArgs& args, Stream stream) {
  if (args.n_tokens == 0) return;
  const dim3 grid(static_cast<unsigned>(args.n_heads + 1), static_cast<unsigned>(args.n_tokens));
  latent_prepare_kernel<<<grid, kThreads, 0, stream>>>(args);
}

}  // namespace dancemoe::kernels::cuda
