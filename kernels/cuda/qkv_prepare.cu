#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/qkv_prepare.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kThreads = 64;

// One block per (head slot, token): slots [0, n_heads) are query heads,
// [n_heads, n_heads + n_kv_heads) key/value heads. The head is assembled in
// shared memory and then written, so rotating q in place is safe whatever
// the layout (the pairs layout moves values between threads).
__global__ void qkv_prepare_kernel(QkvPrepareArgs a) {
  __shared__ float scratch[kWarp];
  __shared__ float head[kMaxHeadDim];
  const int64_t t = blockIdx.y;
  const int64_t slot = blockIdx.x;
  const bool is_q = slot < a.n_heads;
  const int64_t h = is_q ? slot : slot - a.n_heads;
  const int64_t d = a.head_dim;
  const int64_t r = a.rotary_dim > 0 ? a.rotary_dim : d;
  const int64_t half = r / 2;
  const int64_t pos = *a.d_pos0 + t;
  const int64_t kv_dim = a.n_kv_heads * d;
  const float* src = is_q ? a.q + t * a.q_stride + h * d : a.k + t * a.kv_stride + h * d;
  float* dst = is_q ? a.q + t * a.q_stride + h * d : a.k_cache + pos * kv_dim + h * d;
  const float* norm = is_q ? a.q_norm : a.k_norm;

  float inv_rms = 1.0f;
  if (norm != nullptr) {
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss = fmaf(src[i], src[i], ss);
    ss = block_sum(ss, scratch);
    inv_rms = 1.0f / sqrtf(ss / static_cast<float>(d) + a.eps);
  }
  auto value = [&](int64_t i) { return norm != nullptr ? src[i] * inv_rms * norm[i] : src[i]; };
  const float* cos_t = a.cos + t * half;
  const float* sin_t = a.sin + t * half;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const int64_t i0 = a.pairs ? 2 * i : i;
    const int64_t i1 = a.pairs ? 2 * i + 1 : i + half;
    const float x0 = value(i0);
    const float x1 = value(i1);
    const float c = cos_t[i] * a.rope_scale;
    const float s = sin_t[i] * a.rope_scale;
    head[i] = x0 * c - x1 * s;
    head[i + half] = x1 * c + x0 * s;
  }
  for (int64_t i = r + threadIdx.x; i < d; i += blockDim.x) head[i] = value(i);
  __syncthreads();
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dst[i] = head[i];
  if (!is_q) {
    const float* v = a.v + t * a.kv_stride + h * d;
    float* v_dst = a.v_cache + pos * kv_dim + h * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) v_dst[i] = v[i];
  }
}

}  // namespace

void qkv_prepare(const QkvPrepareArgs& args, Stream stream) {
  if (args.n_tokens == 0) return;
  const dim3 grid(static_cast<unsigned>(args.n_heads + args.n_kv_heads),
                  static_cast<unsigned>(args.n_tokens));
  qkv_prepare_kernel<<<grid, kThreads, 0, stream>>>(args);
}

}  // namespace dancemoe::kernels::cuda
