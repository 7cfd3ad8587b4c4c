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

// Group-limited choice on `choice` [n_experts] in shared memory: each
// group's score, the topk_group best groups (lower index on ties), the rest
// set to 0, as routing.cpp's limit_to_groups does. group_scores: [n_group].
__device__ void limit_to_groups(const RouterArgs& a, float* choice, float* group_scores) {
  const int64_t per_group = a.n_experts / a.n_group;
  for (int64_t g = threadIdx.x; g < a.n_group; g += blockDim.x) {
    const float* first = choice + g * per_group;
    float best = -INFINITY, second = -INFINITY;
    for (int64_t i = 0; i < per_group; ++i) {
      if (first[i] > best) {
        second = best;
        best = first[i];
      } else if (first[i] > second) {
        second = first[i];
      }
    }
    group_scores[g] = !a.group_top2_sum || per_group < 2 ? best : best + second;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // topk_group rounds of arg-max over the (few) groups; the kept ones are
    // marked +inf, then every group not marked is cleared.
    for (int64_t k = 0; k < a.topk_group; ++k) {
      int64_t pick = -1;
      for (int64_t g = 0; g < a.n_group; ++g) {
        if (group_scores[g] == INFINITY) continue;
        if (pick < 0 || group_scores[g] > group_scores[pick]) pick = g;
      }
      if (pick < 0) break;  // only NaN scores left
      group_scores[pick] = INFINITY;
    }
  }
  __syncthreads();
  for (int64_t e = threadIdx.x; e < a.n_experts; e += blockDim.x) {
    if (group_scores[e / per_group] != INFINITY) choice[e] = 0.0f;
  }
  __syncthreads();
}

// One block per token. values: the scores top-k picks from (choice scores
// or logits) in shared memory; chosen entries are marked -inf. probs: the
// weights' source (softmax / sigmoid orders).
__global__ void router_kernel(RouterArgs a) {
  extern __shared__ float shared[];  // values [n_experts], probs [n_experts], groups [n_group]
  __shared__ float scratch[kWarp];
  __shared__ Best best_scratch[kThreads / kWarp];
  const int64_t t = blockIdx.x;
  const int64_t n = a.n_experts;
  float* values = shared;
  float* probs = shared + n;
  float* group_scores = shared + 2 * n;
  const float* row = a.logits + t * n;
  int32_t* ids = a.ids + t * a.top_k;
  float* w = a.weights + t * a.top_k;
  const bool topk_first = a.order == RouterOrder::kTopKThenSoftmax;

  if (a.order == RouterOrder::kSoftmaxThenTopK) {
    float m = -INFINITY;
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) m = fmaxf(m, row[e]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
      probs[e] = expf(row[e] - m);
      s += probs[e];
    }
    s = block_sum(s, scratch);
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) probs[e] /= s;
  } else if (a.order == RouterOrder::kSigmoid) {
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x) probs[e] = 1.0f / (1.0f + expf(-row[e]));
  }
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    values[e] = topk_first ? row[e] : probs[e] + (a.choice_bias ? a.choice_bias[e] : 0.0f);
  }
  __syncthreads();
  if (!topk_first && a.n_group > 1) limit_to_groups(a, values, group_scores);

  // k rounds of arg-max; thread 0 records each winner and removes it.
  for (int64_t k = 0; k < a.top_k; ++k) {
    Best b{-INFINITY, 0x7fffffff};
    for (int64_t e = threadIdx.x; e < n; e += blockDim.x)
      b = better(b, Best{values[e], static_cast<int>(e)});
    b = block_argmax(b, best_scratch);
    if (threadIdx.x == 0) {
      ids[k] = b.index;
      w[k] = topk_first ? row[b.index] : probs[b.index];
      values[b.index] = -INFINITY;
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  if (!topk_first) {
    if (a.norm_topk_prob) {
      float kept = 0.0f;
      for (int64_t k = 0; k < a.top_k; ++k) kept += w[k];
      for (int64_t k = 0; k < a.top_k; ++k) w[k] /= kept + a.norm_epsilon;
    }
    if (a.routed_scale != 1.0f) {
      for (int64_t k = 0; k < a.top_k; ++k) w[k] *= a.routed_scale;
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
  const size_t smem = sizeof(float) * static_cast<size_t>(2 * args.n_experts + args.n_group);
  router_kernel<<<static_cast<unsigned>(args.n_tokens), kThreads, smem, stream>>>(args);
}

}  // namespace dancemoe::kernels::cuda
