// Mixtral (MixtralForCausalLM), following HF transformers' modeling_mixtral:
// no q/k norm; the router takes the top-k logits and softmaxes over them
// (HF computes softmax over all, top-k, then divides by the sum: the same
// weights); every layer is an MoE layer; experts are w1 (gate), w3 (up),
// w2 (down) under block_sparse_moe; sliding_window applies to every layer.
#include "common/model/arch/architecture.h"

namespace dancemoe::arch {
namespace {

Status parse_mixtral(const JsonField& f, ModelConfig* c) {
  c->qk_norm = QkNormKind::kNone;
  c->router_scoring = RouterScoring::kTopKThenSoftmax;
  c->norm_topk_prob = true;
  DMOE_ASSIGN_OR_RETURN(c->n_experts, f.positive_int("num_local_experts"));
  DMOE_ASSIGN_OR_RETURN(c->n_experts_per_token, f.positive_int("num_experts_per_tok"));
  DMOE_ASSIGN_OR_RETURN(c->moe_intermediate_size, f.positive_int("intermediate_size"));
  // Mistral's sliding window: every layer attends to the last
  // sliding_window positions (null: to all).
  DMOE_ASSIGN_OR_RETURN(c->sliding_window, f.non_negative_int_or("sliding_window", 0));
  if (c->sliding_window > 0) c->layer_sliding.assign(static_cast<size_t>(c->n_layers), true);
  // MixtralConfig's defaults differ from the Llama-style ones read in common.
  if (!f.has("rope_theta")) c->rope_theta = 1e6;
  if (!f.has("rms_norm_eps")) c->rms_norm_eps = 1e-5f;
  c->layer_is_moe.assign(static_cast<size_t>(c->n_layers), true);
  c->naming[TensorRole::kRouter] = "model.layers.{L}.block_sparse_moe.gate.weight";
  c->naming[TensorRole::kExpertGate] = "model.layers.{L}.block_sparse_moe.experts.{E}.w1.weight";
  c->naming[TensorRole::kExpertUp] = "model.layers.{L}.block_sparse_moe.experts.{E}.w3.weight";
  c->naming[TensorRole::kExpertDown] = "model.layers.{L}.block_sparse_moe.experts.{E}.w2.weight";
  return Status::ok();
}

}  // namespace

const ArchitectureSpec& mixtral_spec() {
  static const ArchitectureSpec kSpec{"MixtralForCausalLM", "mixtral", parse_mixtral};
  return kSpec;
}

}  // namespace dancemoe::arch
