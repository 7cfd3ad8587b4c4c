// DeepSeek-V2 and V2-Lite (DeepseekV2ForCausalLM), following DeepSeek's
// published modeling_deepseek.py:
// - multi-head latent attention (read_latent_attention): q straight from
//   q_proj (q_lora_rank null, V2-Lite) or through q_a_proj -> RMSNorm ->
//   q_b_proj (V2); keys and values decompressed from a kv_lora_rank latent
//   plus one shared rotary key; the cache keeps the latent;
// - layers [0, first_k_dense_replace) are dense MLPs (intermediate_size),
//   later ones (every moe_layer_freq-th) MoE layers with n_routed_experts
//   and n_shared_experts shared experts (one SwiGLU of n_shared *
//   moe_intermediate_size, part of the dense model);
// - the router softmaxes over all experts; topk_method "greedy" takes the
//   top k, "group_limited_greedy" first keeps the topk_group of n_group
//   groups with the best expert; with norm_topk_prob (and k > 1) the k
//   weights are renormalised, otherwise multiplied by routed_scaling_factor
//   (the published code does one or the other).
#include "common/model/arch/architecture.h"

namespace dancemoe::arch {
namespace {

Status parse_deepseek_v2(const JsonField& f, ModelConfig* c) {
  DMOE_RETURN_IF_ERROR(read_latent_attention(f, c));
  DMOE_RETURN_IF_ERROR(read_leading_dense_layers(f, c));
  DMOE_RETURN_IF_ERROR(refuse_unless(f, "scoring_func", "softmax", "\"softmax\""));
  c->router_scoring = RouterScoring::kSoftmaxThenTopK;
  c->group_score = GroupScore::kMax;
  c->topk_norm_epsilon = 1e-20f;
  DMOE_ASSIGN_OR_RETURN(std::string method, f.string_or("topk_method", "greedy"));
  if (method == "group_limited_greedy") {
    DMOE_ASSIGN_OR_RETURN(c->n_group, f.positive_int("n_group"));
    DMOE_ASSIGN_OR_RETURN(c->topk_group, f.positive_int("topk_group"));
  } else if (method != "greedy") {
    DMOE_ASSIGN_OR_RETURN(JsonField field, f.member("topk_method"));
    return field.unsupported(method, "greedy, group_limited_greedy");
  }
  DMOE_ASSIGN_OR_RETURN(bool norm, f.bool_or("norm_topk_prob", false));
  DMOE_ASSIGN_OR_RETURN(double scale, f.positive_number_or("routed_scaling_factor", 1.0));
  c->norm_topk_prob = norm && c->n_experts_per_token > 1;
  c->routed_scaling_factor = c->norm_topk_prob ? 1.0 : scale;
  return Status::ok();  // the default TensorNaming is DeepSeek's
}

}  // namespace

const ArchitectureSpec& deepseek_v2_spec() {
  static const ArchitectureSpec kSpec{"DeepseekV2ForCausalLM", "deepseek_v2", parse_deepseek_v2};
  return kSpec;
}

}  // namespace dancemoe::arch
