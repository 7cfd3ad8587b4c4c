#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/qkv_prepare.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kThreads = 64;

// One block per (head slot, token): slots [0, n_heads) are query heads,
// [n_heads, n_heads + n_kv_heads) key/value heads.
__global__ void qkv_prepare_kernel(QkvPrepareArgs a) {
  __shared__ float scratch[kWarp];
  const int64_t t = blockIdx.y;
  const int64_t slot = blockIdx.x;
  const bool is_q = slot < a.n_heads;
  const int64_t h = is_q ? slot : slot - a.n_heads;
  const int64_t d = a.head_dim;
  const int64_t half = d / 2;
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
  const float* cos_t = a.cos + t * half;
  const float* sin_t = a.sin + t * half;
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    float x0 = src[i];
    float x1 = src[i + half];
    if (norm != nullptr) {
      x0 = x0 * inv_rms * norm[i];
      x1 = x1 * inv_rms * norm[i + half];
    }
    // In place for q: each thread reads its own pair before writing it.
    dst[i] = x0 * cos_t[i] - x1 * sin_t[i];
    dst[i + half] = x1 * cos_t[i] + x0 * sin_t[i];
  }
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
