// Router: expert choice and weights per token from the router logits.
//   logits: [n_tokens, n_experts] f32
//   ids:     [n_tokens, top_k] int32, highest weight first, lower index on ties
//   weights: [n_tokens, top_k] f32
// kSoftmaxThenTopK: p = softmax(logits); top-k of p; with norm_topk_prob the
//                   k weights are divided by their sum (Qwen3-MoE, OLMoE).
// kTopKThenSoftmax: top-k of the logits; softmax over those k (Mixtral).
// The same definitions as common/inference/routing.cpp, in the same order of
// operations per element (exp, sum, divide); only the sums' order differs.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

enum class RouterOrder : uint8_t { kSoftmaxThenTopK, kTopKThenSoftmax };

struct RouterArgs {
  const float* logits = nullptr;
  int64_t n_tokens = 0;
  int64_t n_experts = 0;
  int64_t top_k = 0;
  RouterOrder order = RouterOrder::kSoftmaxThenTopK;
  bool norm_topk_prob = false;
  int32_t* ids = nullptr;
  float* weights = nullptr;
};

void router_topk(const RouterArgs& args, Stream stream);

}  // namespace dancemoe::kernels::cuda
