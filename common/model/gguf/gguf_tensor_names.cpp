#include "common/model/gguf/gguf_tensor_names.h"

#include <string_view>

namespace dancemoe::gguf {
std::string gguf_layer_name(int64_t layer, std::string_view what) {
  return "blk." + std::to_string(layer) + "." + std::string(what);
}

std::string gguf_tensor_name(const ModelConfig& config, TensorRole role, int64_t layer) {
  switch (role) {
    case TensorRole::kEmbed:
      return "token_embd.weight";
    case TensorRole::kFinalNorm:
      return "output_norm.weight";
    case TensorRole::kLmHead:
      return "output.weight";
    case TensorRole::kInputNorm:
      return gguf_layer_name(layer, "attn_norm.weight");
    case TensorRole::kPostAttentionNorm: {
      // gpt-oss and GLM-4.5 name the norm after attention, the others before the FFN.
      const bool after = config.model_type == "gpt_oss" || config.model_type == "glm4_moe";
      return gguf_layer_name(layer, after ? "post_attention_norm.weight" : "ffn_norm.weight");
    }
    case TensorRole::kQ:
      return gguf_layer_name(layer, "attn_q.weight");
    case TensorRole::kK:
      return gguf_layer_name(layer, "attn_k.weight");
    case TensorRole::kV:
      return gguf_layer_name(layer, "attn_v.weight");
    case TensorRole::kO:
      return gguf_layer_name(layer, "attn_output.weight");
    case TensorRole::kQBias:
      return gguf_layer_name(layer, "attn_q.bias");
    case TensorRole::kKBias:
      return gguf_layer_name(layer, "attn_k.bias");
    case TensorRole::kVBias:
      return gguf_layer_name(layer, "attn_v.bias");
    case TensorRole::kOBias:
      return gguf_layer_name(layer, "attn_output.bias");
    case TensorRole::kQNorm:
      return gguf_layer_name(layer, "attn_q_norm.weight");
    case TensorRole::kKNorm:
      return gguf_layer_name(layer, "attn_k_norm.weight");
    case TensorRole::kSinks:
      return gguf_layer_name(layer, "attn_sinks.weight");
    case TensorRole::kQA:
      return gguf_layer_name(layer, "attn_q_a.weight");
    case TensorRole::kQANorm:
      return gguf_layer_name(layer, "attn_q_a_norm.weight");
    case TensorRole::kQB:
      return gguf_layer_name(layer, "attn_q_b.weight");
    case TensorRole::kKvA:
      return gguf_layer_name(layer, "attn_kv_a_mqa.weight");
    case TensorRole::kKvANorm:
      return gguf_layer_name(layer, "attn_kv_a_norm.weight");
    case TensorRole::kKvB:
      return gguf_layer_name(layer, "attn_kv_b.weight");
    case TensorRole::kRouter:
      return gguf_layer_name(layer, "ffn_gate_inp.weight");
    case TensorRole::kRouterBias:
      return gguf_layer_name(layer, "ffn_gate_inp.bias");
    case TensorRole::kRouterChoiceBias:
      return gguf_layer_name(layer, "exp_probs_b.bias");
    case TensorRole::kExpertGate:
      return gguf_layer_name(layer, "ffn_gate_exps.weight");
    case TensorRole::kExpertUp:
      return gguf_layer_name(layer, "ffn_up_exps.weight");
    case TensorRole::kExpertDown:
      return gguf_layer_name(layer, "ffn_down_exps.weight");
    case TensorRole::kExpertGateBias:
      return gguf_layer_name(layer, "ffn_gate_exps.bias");
    case TensorRole::kExpertUpBias:
      return gguf_layer_name(layer, "ffn_up_exps.bias");
    case TensorRole::kExpertDownBias:
      return gguf_layer_name(layer, "ffn_down_exps.bias");
    case TensorRole::kDenseGate:
      return gguf_layer_name(layer, "ffn_gate.weight");
    case TensorRole::kDenseUp:
      return gguf_layer_name(layer, "ffn_up.weight");
    case TensorRole::kDenseDown:
      return gguf_layer_name(layer, "ffn_down.weight");
    case TensorRole::kSharedGate:
      return gguf_layer_name(layer, "ffn_gate_shexp.weight");
    case TensorRole::kSharedUp:
      return gguf_layer_name(layer, "ffn_up_shexp.weight");
    case TensorRole::kSharedDown:
      return gguf_layer_name(layer, "ffn_down_shexp.weight");
    case TensorRole::kSharedExpertGate:
      return gguf_layer_name(layer, "ffn_gate_inp_shexp.weight");
  }
  return {};
}

std::pair<std::string, std::string> gguf_split_kv_b_names(int64_t layer) {
  return {gguf_layer_name(layer, "attn_k_b.weight"), gguf_layer_name(layer, "attn_v_b.weight")};
}

std::string gguf_single_expert_name(TensorRole role, int64_t layer, int64_t expert) {
  const char* what = role == TensorRole::kExpertGate ? "ffn_gate."
                     : role == TensorRole::kExpertUp ? "ffn_up."
                                                     : "ffn_down.";
  return gguf_layer_name(layer, what + std::to_string(expert) + ".weight");
}

bool gguf_interleaves_qk(const ModelConfig& config) { return config.model_type == "mixtral"; }

int64_t llama_qk_row(int64_t hf_row, int64_t head_dim) {
  const int64_t half = head_dim / 2;
  const int64_t head = hf_row / head_dim;
  const int64_t within = hf_row % head_dim;
  const int64_t j = within / half;  // which half
  const int64_t i = within % half;
  return head * head_dim + 2 * i + j;
}

}  // namespace dancemoe::gguf
