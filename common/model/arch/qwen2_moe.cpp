// Qwen2-MoE (Qwen2MoeForCausalLM, Qwen1.5-MoE / Qwen2-57B-A14B), following
// HF transformers' modeling_qwen2_moe: q, k and v projections with biases
// (qkv_bias, true unless a config says otherwise), no q/k norm; the router
// softmaxes over all experts, top-k, renormalised when norm_topk_prob; every
// MoE layer also has one shared expert of shared_expert_intermediate_size,
// scaled per token by sigmoid(shared_expert_gate x), part of the dense
// model; layer l is an MoE layer unless l is in mlp_only_layers or (l + 1)
// is not a multiple of decoder_sparse_step (then a dense MLP of
// intermediate_size).
#include <algorithm>

#include "common/model/arch/architecture.h"

namespace dancemoe::arch {
namespace {

Status parse_qwen2_moe(const JsonField& f, ModelConfig* c) {
  c->qk_norm = QkNormKind::kNone;
  c->router_scoring = RouterScoring::kSoftmaxThenTopK;
  DMOE_ASSIGN_OR_RETURN(c->attention_bias, f.bool_or("qkv_bias", true));
  DMOE_ASSIGN_OR_RETURN(c->n_experts, f.positive_int("num_experts"));
  DMOE_ASSIGN_OR_RETURN(c->n_experts_per_token, f.positive_int("num_experts_per_tok"));
  DMOE_ASSIGN_OR_RETURN(c->moe_intermediate_size, f.positive_int("moe_intermediate_size"));
  DMOE_ASSIGN_OR_RETURN(c->dense_intermediate_size, f.positive_int("intermediate_size"));
  DMOE_ASSIGN_OR_RETURN(c->shared_intermediate_size,
                        f.positive_int("shared_expert_intermediate_size"));
  c->shared_expert_gate = true;
  c->naming[TensorRole::kSharedGate] = "model.layers.{L}.mlp.shared_expert.gate_proj.weight";
  c->naming[TensorRole::kSharedUp] = "model.layers.{L}.mlp.shared_expert.up_proj.weight";
  c->naming[TensorRole::kSharedDown] = "model.layers.{L}.mlp.shared_expert.down_proj.weight";
  DMOE_ASSIGN_OR_RETURN(c->norm_topk_prob, f.bool_or("norm_topk_prob", false));
  DMOE_ASSIGN_OR_RETURN(int64_t sparse_step, f.positive_int_or("decoder_sparse_step", 1));
  DMOE_ASSIGN_OR_RETURN(std::vector<int64_t> mlp_only, f.int_list_or("mlp_only_layers", {}));
  DMOE_RETURN_IF_ERROR(refuse_unless(f, "use_sliding_window", false,
                                     "false (Qwen2-MoE's sliding window is not implemented)"));
  DMOE_RETURN_IF_ERROR(refuse_unless(f, "hidden_act", "silu", "\"silu\""));
  c->layer_is_moe.assign(static_cast<size_t>(c->n_layers), false);
  for (int64_t l = 0; l < c->n_layers; ++l) {
    const bool dense_only = std::find(mlp_only.begin(), mlp_only.end(), l) != mlp_only.end();
    c->layer_is_moe[static_cast<size_t>(l)] = !dense_only && (l + 1) % sparse_step == 0;
  }
  return Status::ok();
}

}  // namespace

const ArchitectureSpec& qwen2_moe_spec() {
  static const ArchitectureSpec kSpec{"Qwen2MoeForCausalLM", "qwen2_moe", parse_qwen2_moe};
  return kSpec;
}

}  // namespace dancemoe::arch
