// Qwen3-MoE (Qwen3MoeForCausalLM), following HF transformers'
// modeling_qwen3_moe: per-head RMSNorm on q and k before RoPE; router
// softmax over all experts, top-k, renormalised when norm_topk_prob; layer l
// is an MoE layer unless l is in mlp_only_layers or (l + 1) is not a
// multiple of decoder_sparse_step.
#include <algorithm>

#include "common/model/arch/architecture.h"

namespace dancemoe::arch {
namespace {

Status parse_qwen3_moe(const JsonField& f, ModelConfig* c) {
  c->qk_norm = QkNormKind::kPerHead;
  c->router_scoring = RouterScoring::kSoftmaxThenTopK;
  DMOE_ASSIGN_OR_RETURN(c->n_experts, f.positive_int("num_experts"));
  DMOE_ASSIGN_OR_RETURN(c->n_experts_per_token, f.positive_int("num_experts_per_tok"));
  DMOE_ASSIGN_OR_RETURN(c->moe_intermediate_size, f.positive_int("moe_intermediate_size"));
  DMOE_ASSIGN_OR_RETURN(c->dense_intermediate_size, f.positive_int("intermediate_size"));
  DMOE_ASSIGN_OR_RETURN(c->norm_topk_prob, f.bool_or("norm_topk_prob", false));
  DMOE_ASSIGN_OR_RETURN(int64_t sparse_step, f.positive_int_or("decoder_sparse_step", 1));
  DMOE_ASSIGN_OR_RETURN(std::vector<int64_t> mlp_only, f.int_list_or("mlp_only_layers", {}));
  DMOE_ASSIGN_OR_RETURN(bool sliding, f.bool_or("use_sliding_window", false));
  if (sliding)
    return f.member_error("use_sliding_window",
                          "false (sliding-window attention is not supported yet)");
  c->layer_is_moe.assign(static_cast<size_t>(c->n_layers), false);
  for (int64_t l = 0; l < c->n_layers; ++l) {
    const bool dense_only = std::find(mlp_only.begin(), mlp_only.end(), l) != mlp_only.end();
    c->layer_is_moe[static_cast<size_t>(l)] = !dense_only && (l + 1) % sparse_step == 0;
  }
  return Status::ok();  // default TensorNaming is Qwen's
}

}  // namespace

const ArchitectureSpec& qwen3_moe_spec() {
  static const ArchitectureSpec kSpec{"Qwen3MoeForCausalLM", "qwen3_moe", parse_qwen3_moe};
  return kSpec;
}

}  // namespace dancemoe::arch
