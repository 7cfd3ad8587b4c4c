// Router: expert choice and weights per token from the router logits.
//   logits: [n_tokens, n_experts] f32 (any router bias already added: the
//           router projection's bias)
//   ids:     [n_tokens, top_k] int32, highest choice score first, lower
//            index on ties
//   weights: [n_tokens, top_k] f32
// kSoftmaxThenTopK: p = softmax(logits) (Qwen3-MoE, OLMoE, DeepSeek-V2).
// kSigmoid:         p = sigmoid(logits) (DeepSeek-V3, GLM-4.5).
//   For both: the choice score is p + choice_bias (null: p); with n_group > 1
//   the experts are n_group consecutive groups, each scored by its best
//   choice score (kMax) or the sum of its best two (kTop2Sum), and the
//   experts outside the topk_group best groups get a choice score of 0; the
//   top_k choice scores pick the experts, whose weights are their p; with
//   norm_topk_prob those are divided by (their sum + norm_epsilon); then
//   multiplied by routed_scale.
// kTopKThenSoftmax: top-k of the logits; softmax over those k (Mixtral,
//   gpt-oss); the fields above do not apply.
// The same definitions as common/inference/routing.cpp, in the same order of
// operations per element (exp, sum, divide); only the softmax sum's order
// differs.
#pragma once

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

enum class RouterOrder : uint8_t { kSoftmaxThenTopK, kTopKThenSoftmax, kSigmoid };

struct RouterArgs {
  const float* logits = nullptr;
  int64_t n_tokens = 0;
  int64_t n_experts = 0;
  int64_t top_k = 0;
  RouterOrder order = RouterOrder::kSoftmaxThenTopK;
  bool norm_topk_prob = false;
  float norm_epsilon = 0.0f;
  const float* choice_bias = nullptr;  // [n_experts] or null
  int64_t n_group = 1;                 // n_experts % n_group == 0
  int64_t topk_group = 1;
  bool group_top2_sum = false;  // group score: sum of the best two (else the best)
  float routed_scale = 1.0f;
  int32_t* ids = nullptr;
  float* weights = nullptr;
};

void router_topk(const RouterArgs& args, Stream stream);

}  // namespace dancemoe::kernels::cuda
