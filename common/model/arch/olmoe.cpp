// OLMoE (OlmoeForCausalLM), following HF transformers' modeling_olmoe:
// RMSNorm over the whole q and k projections (q_norm: [q_dim], k_norm:
// [kv_dim]) before RoPE; every layer is an MoE layer of num_experts SwiGLU
// experts of intermediate_size; the router softmaxes over all experts and
// keeps the top k without renormalising unless norm_topk_prob. clip_qkv
// (clamping q, k, v) is not implemented and refused when set.
#include "common/model/arch/architecture.h"

namespace dancemoe::arch {
namespace {

Status parse_olmoe(const JsonField& f, ModelConfig* c) {
  c->qk_norm = QkNormKind::kFull;
  c->router_scoring = RouterScoring::kSoftmaxThenTopK;
  DMOE_ASSIGN_OR_RETURN(c->n_experts, f.positive_int("num_experts"));
  DMOE_ASSIGN_OR_RETURN(c->n_experts_per_token, f.positive_int("num_experts_per_tok"));
  DMOE_ASSIGN_OR_RETURN(c->moe_intermediate_size, f.positive_int("intermediate_size"));
  DMOE_ASSIGN_OR_RETURN(c->norm_topk_prob, f.bool_or("norm_topk_prob", false));
  DMOE_RETURN_IF_ERROR(
      refuse_unless(f, "clip_qkv", nullptr, "null (clamping q, k and v is not implemented)"));
  DMOE_RETURN_IF_ERROR(refuse_unless(f, "hidden_act", "silu", "\"silu\""));
  // OlmoeConfig's defaults differ from the Llama-style ones read in common.
  if (!f.has("rms_norm_eps")) c->rms_norm_eps = 1e-5f;
  c->layer_is_moe.assign(static_cast<size_t>(c->n_layers), true);
  return Status::ok();  // the default TensorNaming is OLMoE's
}

}  // namespace

const ArchitectureSpec& olmoe_spec() {
  static const ArchitectureSpec kSpec{"OlmoeForCausalLM", "olmoe", parse_olmoe};
  return kSpec;
}

}  // namespace dancemoe::arch
