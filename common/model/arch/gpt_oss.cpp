// gpt-oss (GptOssForCausalLM), following HF transformers' modeling_gpt_oss
// and the published checkpoints (openai/gpt-oss-20b, -120b):
// - attention: q, k, v and o projections with biases (attention_bias), a
//   learned sink logit per head that joins every softmax without a value
//   (self_attn.sinks), "rotate half" RoPE with YaRN (rope_scaling), and
//   layer_types alternating "sliding_attention" (the last sliding_window
//   positions) and "full_attention" -- by default layer l slides when l is
//   even, as GptOssConfig fills it;
// - MoE on every layer: the router is a linear map with a bias
//   (mlp.router.weight / .bias); the top-k logits are softmaxed;
// - experts with biases and the clamped SwiGLU: g = min(gate, limit),
//   u = clamp(up, -limit, limit), down((u + 1) g sigmoid(1.702 g)) + bias,
//   limit = swiglu_limit (alpha 1.702 is fixed in the published code);
// - the experts as published: quantization_config.quant_method "mxfp4",
//   each layer's experts stacked in mlp.experts.{gate_up,down}_proj_blocks /
//   _scales (U8) and _bias, gate and up rows interleaved. The per-expert
//   tensors are views of those (common/model/stacked_experts.h), named here
//   as slices so that messages say where they come from. The dequantized
//   layout some re-uploads use (gate_up_proj [E, hidden, 2 inter], bf16) is
//   refused.
#include "common/model/arch/architecture.h"

namespace dancemoe::arch {
namespace {

Status read_layer_types(const JsonField& f, ModelConfig* c) {
  const size_t n = static_cast<size_t>(c->n_layers);
  c->layer_sliding.assign(n, false);
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> types, f.optional_member("layer_types"));
  if (!types) {
    for (size_t l = 0; l < n; ++l) c->layer_sliding[l] = (l + 1) % 2 == 1;
    return Status::ok();
  }
  DMOE_RETURN_IF_ERROR(types->expect_array());
  if (types->json().size() != n) {
    return types->error("expected one entry per layer (" + std::to_string(n) + "), got " +
                        std::to_string(types->json().size()));
  }
  for (size_t l = 0; l < n; ++l) {
    const JsonField entry = types->element(l);
    DMOE_ASSIGN_OR_RETURN(std::string type, entry.as_string());
    if (type != "sliding_attention" && type != "full_attention") {
      return entry.unsupported(type, "sliding_attention, full_attention");
    }
    c->layer_sliding[l] = type == "sliding_attention";
  }
  return Status::ok();
}

Status read_quantization(const JsonField& f) {
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> q, f.optional_member("quantization_config"));
  if (!q) {
    return f.member_error("quantization_config",
                          "{\"quant_method\": \"mxfp4\"} (gpt-oss's experts as published; the "
                          "dequantized layout is not supported)");
  }
  DMOE_ASSIGN_OR_RETURN(std::string method, q->required_string("quant_method"));
  if (method != "mxfp4") {
    DMOE_ASSIGN_OR_RETURN(JsonField m, q->member("quant_method"));
    return m.unsupported(method, "mxfp4");
  }
  return Status::ok();
}

Status parse_gpt_oss(const JsonField& f, ModelConfig* c) {
  DMOE_ASSIGN_OR_RETURN(c->attention_bias, f.bool_or("attention_bias", true));
  c->attention_out_bias = c->attention_bias;
  c->attention_sinks = true;
  c->qk_norm = QkNormKind::kNone;
  DMOE_ASSIGN_OR_RETURN(c->sliding_window, f.positive_int_or("sliding_window", 128));
  DMOE_RETURN_IF_ERROR(read_layer_types(f, c));
  DMOE_ASSIGN_OR_RETURN(c->n_experts, f.positive_int("num_local_experts"));
  DMOE_ASSIGN_OR_RETURN(c->n_experts_per_token, f.positive_int("num_experts_per_tok"));
  DMOE_ASSIGN_OR_RETURN(c->moe_intermediate_size, f.positive_int("intermediate_size"));
  c->router_scoring = RouterScoring::kTopKThenSoftmax;
  c->norm_topk_prob = true;
  c->router_bias = true;
  c->expert_bias = true;
  c->expert_activation = ExpertActivation::kClampedSwiGLU;
  c->swiglu_alpha = 1.702f;
  DMOE_ASSIGN_OR_RETURN(double limit, f.finite_positive_or("swiglu_limit", 7.0));
  c->swiglu_limit = static_cast<float>(limit);
  DMOE_RETURN_IF_ERROR(refuse_unless(f, "hidden_act", "silu", "\"silu\""));
  DMOE_RETURN_IF_ERROR(read_quantization(f));
  if (c->hidden_size % 32 != 0 || c->moe_intermediate_size % 32 != 0) {
    return f.member_error("hidden_size",
                          "hidden_size and intermediate_size multiples of 32 (MXFP4 blocks)");
  }
  // GptOssConfig's defaults differ from the Llama-style ones read in common.
  if (!f.has("rms_norm_eps")) c->rms_norm_eps = 1e-5f;
  if (!f.has("rope_theta")) c->rope_theta = 150000.0;
  c->layer_is_moe.assign(static_cast<size_t>(c->n_layers), true);

  const std::string mlp = "model.layers.{L}.mlp.";
  c->naming[TensorRole::kRouter] = mlp + "router.weight";
  c->naming[TensorRole::kRouterBias] = mlp + "router.bias";
  c->naming[TensorRole::kExpertGate] = mlp + "experts.gate_up_proj[{E}, 0::2]";
  c->naming[TensorRole::kExpertUp] = mlp + "experts.gate_up_proj[{E}, 1::2]";
  c->naming[TensorRole::kExpertDown] = mlp + "experts.down_proj[{E}]";
  c->naming[TensorRole::kExpertGateBias] = mlp + "experts.gate_up_proj_bias[{E}, 0::2]";
  c->naming[TensorRole::kExpertUpBias] = mlp + "experts.gate_up_proj_bias[{E}, 1::2]";
  c->naming[TensorRole::kExpertDownBias] = mlp + "experts.down_proj_bias[{E}]";
  StackedExpertNames stacked;
  stacked.gate_up_blocks = mlp + "experts.gate_up_proj_blocks";
  stacked.gate_up_scales = mlp + "experts.gate_up_proj_scales";
  stacked.gate_up_bias = mlp + "experts.gate_up_proj_bias";
  stacked.down_blocks = mlp + "experts.down_proj_blocks";
  stacked.down_scales = mlp + "experts.down_proj_scales";
  stacked.down_bias = mlp + "experts.down_proj_bias";
  c->stacked_experts = stacked;
  return Status::ok();
}

}  // namespace

const ArchitectureSpec& gpt_oss_spec() {
  static const ArchitectureSpec kSpec{"GptOssForCausalLM", "gpt_oss", parse_gpt_oss};
  return kSpec;
}

}  // namespace dancemoe::arch
