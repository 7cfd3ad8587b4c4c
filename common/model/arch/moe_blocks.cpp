// Config readers of the blocks several families share (architecture.h):
// DeepSeek's latent attention (V2, V3), leading dense layers with shared
// experts (DeepSeek, GLM-4.5), and the sigmoid "noaux_tc" router (DeepSeek-V3,
// GLM-4.5). Each follows the field names and defaults of the published
// config.json and modeling code.
#include "common/model/arch/architecture.h"

namespace dancemoe::arch {

Status read_latent_attention(const JsonField& f, ModelConfig* c) {
  c->attention = AttentionKind::kLatent;
  DMOE_ASSIGN_OR_RETURN(c->q_lora_rank, f.non_negative_int_or("q_lora_rank", 0));
  DMOE_ASSIGN_OR_RETURN(c->kv_lora_rank, f.positive_int("kv_lora_rank"));
  DMOE_ASSIGN_OR_RETURN(c->qk_nope_head_dim, f.positive_int("qk_nope_head_dim"));
  DMOE_ASSIGN_OR_RETURN(int64_t rope_dim, f.positive_int("qk_rope_head_dim"));
  DMOE_ASSIGN_OR_RETURN(c->v_head_dim, f.positive_int("v_head_dim"));
  DMOE_RETURN_IF_ERROR(refuse_unless(f, "attention_bias", false,
                                     "false (latent attention projections have no biases here)"));
  c->head_dim = c->qk_nope_head_dim + rope_dim;
  c->rotary_dim = rope_dim;
  c->rope_layout = RopeLayout::kPairs;
  c->n_kv_heads = c->n_heads;
  c->qk_norm = QkNormKind::kNone;
  // DeepSeek's attention multiplies its softmax scale by YaRN's
  // mscale(factor, mscale_all_dim)^2 (modeling_deepseek.py).
  const RopeScaling& r = c->rope_scaling;
  if (r.type == RopeScaling::Type::kYarn && r.mscale_all_dim > 0.0) {
    const double m = yarn_mscale(r.factor, r.mscale_all_dim);
    c->attention_scale_multiplier = m * m;
  }
  return Status::ok();
}

Status read_leading_dense_layers(const JsonField& f, ModelConfig* c) {
  DMOE_ASSIGN_OR_RETURN(c->n_experts, f.positive_int("n_routed_experts"));
  DMOE_ASSIGN_OR_RETURN(c->n_experts_per_token, f.positive_int("num_experts_per_tok"));
  DMOE_ASSIGN_OR_RETURN(c->moe_intermediate_size, f.positive_int("moe_intermediate_size"));
  DMOE_ASSIGN_OR_RETURN(c->dense_intermediate_size, f.positive_int("intermediate_size"));
  DMOE_ASSIGN_OR_RETURN(int64_t n_shared, f.non_negative_int_or("n_shared_experts", 0));
  c->shared_intermediate_size = n_shared * c->moe_intermediate_size;
  DMOE_ASSIGN_OR_RETURN(int64_t first_dense, f.non_negative_int_or("first_k_dense_replace", 0));
  DMOE_ASSIGN_OR_RETURN(int64_t freq, f.positive_int_or("moe_layer_freq", 1));
  DMOE_RETURN_IF_ERROR(refuse_unless(f, "hidden_act", "silu", "\"silu\""));
  c->layer_is_moe.assign(static_cast<size_t>(c->n_layers), false);
  for (int64_t l = 0; l < c->n_layers; ++l) {
    c->layer_is_moe[static_cast<size_t>(l)] = l >= first_dense && l % freq == 0;
  }
  return Status::ok();
}

Status read_noaux_router(const JsonField& f, ModelConfig* c) {
  c->router_scoring = RouterScoring::kSigmoid;
  c->router_choice_bias = true;
  c->group_score = GroupScore::kTop2Sum;
  c->topk_norm_epsilon = 1e-20f;
  DMOE_ASSIGN_OR_RETURN(c->n_group, f.positive_int_or("n_group", 1));
  DMOE_ASSIGN_OR_RETURN(c->topk_group, f.positive_int_or("topk_group", 1));
  DMOE_ASSIGN_OR_RETURN(c->norm_topk_prob, f.bool_or("norm_topk_prob", true));
  DMOE_ASSIGN_OR_RETURN(c->routed_scaling_factor,
                        f.positive_number_or("routed_scaling_factor", 1.0));
  return Status::ok();
}

}  // namespace dancemoe::arch
