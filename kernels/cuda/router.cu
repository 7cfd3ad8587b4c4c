#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/router.cuh"

namespace dancemoe::kernels::cuda {
namespace {

constexpr int kThreads = 128;

// (value, index) with the larger value winning and the lower index on ties.
struct Best {
  float value;
  int index;
};

__device__ __forceinline__ Best better(Best a, Best b) {
  if (a.value != b.value) return a.value > b.value ? a : b;
  return a.index < b.index ? a : b;
}

__device__ Best block_argmax(Best b, Best* scratch) {
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    Best o{__shfl_xor_sync(0xffffffffu, b.value, offset),
           __shfl_xor_sync(0xffffffffu, b.index, offset)};
    b = better(b, o);
  }
  __syncthreads();
  if (lane == 0) scratch[warp] = b;
  __syncthreads();
  Best r = scratch[0];
  for (int w = 1; w < kThreads / kWarp; ++w) r = better(r, scratch[w]);
  return r;
}

// One block per token. values: the scores top-k picks from (probabilities
// or logits) in shared memory; chosen entries are marked -inf.
__global__ void router_kernel(RouterArgs a) {
  extern __shared__ float values[];  // [n_experts]
  __shared__ float scratch[kWarp];
  __shared__ Best best_scratch[kThreads / kWarp];
  const int64_t t = blockIdx.x;
  const int64_t n = a.n_experts;
  const float* row = a.logits + t * n;
  int32_t* ids = a.ids + t * a.top_k;
  float* w = a.weights + t * a.top_k;

  if (a.order == RouterOrder::kSoftmaxThenTopK) {
    float m = -INFINITY;
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) m = fmaxf(m, row[e]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
      values[e] = expf(row[e] - m);
      s += values[e];
    }
    s = block_sum(s, scratch);
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) values[e] /= s;
  } else {
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) values[e] = row[e];
  }
  __syncthreads();

  // k rounds of arg-max; thread 0 records each winner and removes it.
  for (int64_t k = 0; k < a.top_k; ++k) {
    Best b{-INFINITY, 0x7fffffff};
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x)
      b = better(b, Best{values[e], static_cast<int>(e)});
    b = block_argmax(b, best_scratch);
    if (threadIdx.x == 0) {
      ids[k] = b.index;
      w[k] = a.order == RouterOrder::kSoftmaxThenTopK ? b.value : row[b.index];
      values[b.index] = -INFINITY;
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  if (a.order == RouterOrder::kSoftmaxThenTopK) {
    if (a.norm_topk_prob) {
      float kept = 0.0f;
      for (int64_t k = 0; k < a.top_k; ++k) kept += w[k];
      for (int64_t k = 0; k < a.top_k; ++k) w[k] /= kept;
    }
  } else {
    const float max_logit = w[0];
    float sum = 0.0f;
    for (int64_t k = 0; k < a.top_k; ++k) {
      w[k] = expf(w[k] - max_logit);
      sum += w[k];
    }
    for (int64_t k = 0; k < a.top_k; ++k) w[k] /= sum;
  }
}

}  // namespace

void router_topk(const RouterArgs& args, Stream stream) {
  if (args.n_tokens == 0) return;
  const size_t smem = sizeof(float) * static_cast<size_t>(args.n_experts);
  router_kernel<<<static_cast<unsigned>(args.n_tokens), kThreads, smem, stream>>>(args);
}

}  // namespace dancemoe::kernels::cuda
