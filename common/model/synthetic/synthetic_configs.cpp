#include "common/model/synthetic/synthetic_configs.h"

#include <algorithm>

namespace dancemoe {
namespace {

using nlohmann::ordered_json;

// The sizes a preset gives every family.
struct Sizes {
  int64_t vocab, hidden, layers, heads, kv_heads, head_dim;
  int64_t experts, top_k, moe_inter, dense_inter;
};

Result<Sizes> preset_sizes(const std::string& preset) {
  if (preset == "tiny") return Sizes{512, 64, 4, 4, 2, 16, 8, 2, 32, 128};
  if (preset == "small") return Sizes{4096, 256, 8, 8, 4, 32, 16, 4, 256, 1024};
  if (preset == "medium") return Sizes{32000, 1024, 16, 16, 8, 64, 32, 8, 512, 2048};
  if (preset == "olmoe-shape") return Sizes{1024, 512, 16, 8, 4, 64, 64, 8, 64, 512};
  return invalid_argument("unknown --preset '" + preset +
                          "' (expected tiny, small, medium or olmoe-shape)");
}

// The fields every Llama-style config.json has.
ordered_json common_fields(const char* hf_arch, const char* model_type, const Sizes& s, bool tied) {
  ordered_json c;
  c["architectures"] = {hf_arch};
  c["model_type"] = model_type;
  c["vocab_size"] = s.vocab;
  c["hidden_size"] = s.hidden;
  c["num_hidden_layers"] = s.layers;
  c["num_attention_heads"] = s.heads;
  c["num_key_value_heads"] = s.kv_heads;
  c["head_dim"] = s.head_dim;
  c["hidden_act"] = "silu";
  c["max_position_embeddings"] = 4096;
  c["rope_theta"] = 1000000.0;
  c["rope_scaling"] = nullptr;
  c["rms_norm_eps"] = 1e-6;
  c["tie_word_embeddings"] = tied;
  c["attention_bias"] = false;
  return c;
}

ordered_json qwen3_moe(const std::string& preset, const Sizes& s, bool tied, bool norm_topk) {
  ordered_json c = common_fields("Qwen3MoeForCausalLM", "qwen3_moe", s, tied);
  const bool tiny = preset == "tiny";
  c["intermediate_size"] = s.dense_inter;
  c["moe_intermediate_size"] = tiny ? 32 : s.moe_inter;
  c["num_experts"] = s.experts;
  c["num_experts_per_tok"] = s.top_k;
  c["norm_topk_prob"] = norm_topk;
  c["decoder_sparse_step"] = 1;
  c["mlp_only_layers"] = tiny ? std::vector<int64_t>{1} : std::vector<int64_t>{};
  c["use_sliding_window"] = false;
  return c;
}

ordered_json mixtral(const std::string& preset, const Sizes& s, bool tied) {
  ordered_json c = common_fields("MixtralForCausalLM", "mixtral", s, tied);
  c["intermediate_size"] = preset == "tiny" ? 64 : s.moe_inter;
  c["rms_norm_eps"] = 1e-5;
  c["num_local_experts"] = s.experts;
  c["num_experts_per_tok"] = s.top_k;
  c["sliding_window"] = nullptr;
  return c;
}

ordered_json olmoe(const Sizes& s, bool tied, bool norm_topk) {
  ordered_json c = common_fields("OlmoeForCausalLM", "olmoe", s, tied);
  c.erase("head_dim");  // OLMoE's head_dim is hidden / heads
  c["rope_theta"] = 10000.0;
  c["rms_norm_eps"] = 1e-5;
  c["intermediate_size"] = s.moe_inter;
  c["num_experts"] = s.experts;
  c["num_experts_per_tok"] = s.top_k;
  c["norm_topk_prob"] = norm_topk;
  c["clip_qkv"] = nullptr;
  return c;
}

ordered_json qwen2_moe(const std::string& preset, const Sizes& s, bool tied, bool norm_topk) {
  ordered_json c = common_fields("Qwen2MoeForCausalLM", "qwen2_moe", s, tied);
  c.erase("head_dim");
  c.erase("attention_bias");
  c["intermediate_size"] = s.dense_inter;
  c["moe_intermediate_size"] = s.moe_inter;
  c["shared_expert_intermediate_size"] = 4 * s.moe_inter;
  c["num_experts"] = s.experts;
  c["num_experts_per_tok"] = s.top_k;
  c["norm_topk_prob"] = norm_topk;
  c["decoder_sparse_step"] = 1;
  c["mlp_only_layers"] = preset == "tiny" ? std::vector<int64_t>{1} : std::vector<int64_t>{};
  c["use_sliding_window"] = false;
  return c;
}

// DeepSeek-V2-Lite's layout (q_lora_rank null, greedy softmax routing, two
// shared experts, one leading dense layer, YaRN with mscale) at preset size;
// V3 adds q_lora_rank, the sigmoid noaux_tc router with groups.
ordered_json deepseek(bool v3, const Sizes& s, bool tied) {
  ordered_json c = common_fields(v3 ? "DeepseekV3ForCausalLM" : "DeepseekV2ForCausalLM",
                                 v3 ? "deepseek_v3" : "deepseek_v2", s, tied);
  c.erase("head_dim");
  c["num_key_value_heads"] = s.heads;
  c["intermediate_size"] = s.dense_inter;
  c["moe_intermediate_size"] = s.moe_inter;
  c["n_routed_experts"] = s.experts;
  c["n_shared_experts"] = v3 ? 1 : 2;
  c["num_experts_per_tok"] = s.top_k;
  c["first_k_dense_replace"] = 1;
  c["moe_layer_freq"] = 1;
  c["q_lora_rank"] = v3 ? ordered_json(s.hidden / 2 + s.head_dim) : ordered_json(nullptr);
  c["kv_lora_rank"] = 2 * s.head_dim;
  c["qk_nope_head_dim"] = s.head_dim;
  c["qk_rope_head_dim"] = s.head_dim / 2;
  c["v_head_dim"] = s.head_dim;
  c["rope_theta"] = 10000.0;
  c["rope_scaling"] = {{"beta_fast", 32},
                       {"beta_slow", 1},
                       {"factor", 40},
                       {"mscale", v3 ? 1.0 : 0.707},
                       {"mscale_all_dim", v3 ? 1.0 : 0.707},
                       {"original_max_position_embeddings", 4096},
                       {"type", "yarn"}};
  c["max_position_embeddings"] = 163840;
  if (v3) {
    c["scoring_func"] = "sigmoid";
    c["topk_method"] = "noaux_tc";
    c["n_group"] = std::min<int64_t>(4, s.experts / 2);
    c["topk_group"] = std::min<int64_t>(2, s.experts / 4);
    c["norm_topk_prob"] = true;
    c["routed_scaling_factor"] = 2.5;
    c["num_nextn_predict_layers"] = 1;
  } else {
    c["scoring_func"] = "softmax";
    c["topk_method"] = "greedy";
    c["n_group"] = 1;
    c["topk_group"] = 1;
    c["norm_topk_prob"] = false;
    c["routed_scaling_factor"] = 1.0;
  }
  return c;
}

// GLM-4.5's layout: partial rotary (half of each head), q/k/v biases, q/k
// norm, a shared expert, one leading dense layer, the sigmoid router.
ordered_json glm4_moe(const Sizes& s, bool tied) {
  ordered_json c = common_fields("Glm4MoeForCausalLM", "glm4_moe", s, tied);
  c["attention_bias"] = true;
  c["use_qk_norm"] = true;
  c["partial_rotary_factor"] = 0.5;
  c["rms_norm_eps"] = 1e-5;
  c["intermediate_size"] = s.dense_inter;
  c["moe_intermediate_size"] = s.moe_inter;
  c["n_routed_experts"] = s.experts;
  c["n_shared_experts"] = 1;
  c["num_experts_per_tok"] = s.top_k;
  c["first_k_dense_replace"] = 1;
  c["n_group"] = 1;
  c["topk_group"] = 1;
  c["norm_topk_prob"] = true;
  c["routed_scaling_factor"] = 2.5;
  c["num_nextn_predict_layers"] = 1;
  return c;
}

// gpt-oss's published layout (openai/gpt-oss-20b's config.json) at preset
// size: biases on q/k/v/o, sinks, layer_types alternating sliding and full
// attention, YaRN (factor 32, no truncation), the clamped SwiGLU, experts
// as MXFP4 blocks + scales. The tiny preset's window (8) is shorter than the
// golden prompt, so the sliding layers differ from the full ones.
ordered_json gpt_oss(const std::string& preset, const Sizes& s, bool tied) {
  ordered_json c = common_fields("GptOssForCausalLM", "gpt_oss", s, tied);
  c["attention_bias"] = true;
  c["attention_dropout"] = 0.0;
  c["rms_norm_eps"] = 1e-5;
  c["rope_theta"] = 150000.0;
  c["rope_scaling"] = {{"beta_fast", 32.0},   {"beta_slow", 1.0},
                       {"factor", 32.0},      {"original_max_position_embeddings", 4096},
                       {"rope_type", "yarn"}, {"truncate", false}};
  c["max_position_embeddings"] = 131072;
  c["initial_context_length"] = 4096;
  c["intermediate_size"] = preset == "tiny" ? 64 : s.moe_inter;
  c["num_local_experts"] = s.experts;
  c["num_experts_per_tok"] = s.top_k;
  c["experts_per_token"] = s.top_k;
  c["swiglu_limit"] = 7.0;
  c["sliding_window"] = preset == "tiny" ? 8 : 128;
  std::vector<std::string> types;
  for (int64_t l = 0; l < s.layers; ++l) {
    types.push_back(l % 2 == 0 ? "sliding_attention" : "full_attention");
  }
  c["layer_types"] = types;
  c["router_aux_loss_coef"] = 0.9;
  c["output_router_logits"] = false;
  c["quantization_config"] = {
      {"modules_to_not_convert",
       {"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}},
      {"quant_method", "mxfp4"}};
  return c;
}

}  // namespace

const std::vector<std::string>& synthetic_architectures() {
  static const std::vector<std::string> kArchs = {"qwen3_moe", "mixtral",     "olmoe",
                                                  "qwen2_moe", "deepseek_v2", "deepseek_v3",
                                                  "glm4_moe",  "gpt_oss"};
  return kArchs;
}

Result<ordered_json> synthetic_config(const std::string& arch_flag, const std::string& preset,
                                      bool tied, bool norm_topk_prob) {
  // The published family names are hyphenated ("gpt-oss"); model_type's are not.
  std::string arch = arch_flag;
  std::replace(arch.begin(), arch.end(), '-', '_');
  std::string names;
  bool known = false;
  for (const std::string& a : synthetic_architectures()) {
    names += (names.empty() ? "" : ", ") + a;
    known = known || a == arch;
  }
  if (!known) {
    return invalid_argument("unknown --arch '" + arch_flag + "' (expected " + names + ")");
  }
  DMOE_ASSIGN_OR_RETURN(Sizes s, preset_sizes(preset));
  if (arch == "mixtral") return mixtral(preset, s, tied);
  // OLMoE and Qwen2-MoE publish norm_topk_prob false (make-model --set changes it).
  if (arch == "olmoe") return olmoe(s, tied, false);
  if (arch == "qwen2_moe") return qwen2_moe(preset, s, tied, false);
  if (arch == "deepseek_v2" || arch == "deepseek_v3")
    return deepseek(arch == "deepseek_v3", s, tied);
  if (arch == "glm4_moe") return glm4_moe(s, tied);
  if (arch == "gpt_oss") return gpt_oss(preset, s, tied);
  return qwen3_moe(preset, s, tied, norm_topk_prob);
}

}  // namespace dancemoe
