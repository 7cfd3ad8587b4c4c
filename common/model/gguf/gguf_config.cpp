#include "common/model/gguf/gguf_config.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/model/gguf/gguf_tensor_names.h"

namespace dancemoe::gguf {
namespace {

using OrderedJson = nlohmann::ordered_json;

class Keys {
 public:
  Keys(const File& file, std::string_view file_name, std::string arch)
      : file_(file), name_(file_name), arch_(std::move(arch)) {}

  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  Status error(const std::string& key, const std::string& what) const {
    return invalid_argument(std::string(name_) + ": metadata '" + key + "': " + what);
  }
  Result<int64_t> positive(std::string_view suffix) const {
    const std::string k = key(suffix);
    const Value* v = file_.find(k);
    if (v == nullptr) return not_found(std::string(name_) + ": metadata '" + k + "' is missing");
    return check_positive(k, v);
  }
  Result<int64_t> positive_or(std::string_view suffix, int64_t fallback) const {
    const std::string k = key(suffix);
    const Value* v = file_.find(k);
    return v == nullptr ? Result<int64_t>(fallback) : check_positive(k, v);
  }
  bool has(std::string_view suffix) const { return file_.find(key(suffix)) != nullptr; }
  const Value* find(std::string_view suffix) const { return file_.find(key(suffix)); }
  Result<int64_t> non_negative_or(std::string_view suffix, int64_t fallback) const {
    const std::string k = key(suffix);
    const Value* v = file_.find(k);
    if (v == nullptr) return fallback;
    if (!v->is_integer() || v->integer_overflows || v->integer < 0 ||
        v->integer > (int64_t{1} << 40)) {
      return error(k, "expected a non-negative integer");
    }
    return v->integer;
  }
  Result<double> number_or(std::string_view suffix, std::optional<double> fallback) const {
    const std::string k = key(suffix);
    const Value* v = file_.find(k);
    if (v == nullptr) {
      if (fallback) return *fallback;
      return not_found(std::string(name_) + ": metadata '" + k + "' is missing");
    }
    if (v->is_float()) return v->real;
    if (v->is_integer()) return static_cast<double>(v->integer);
    return error(k, "expected a number, got " + std::string(value_type_name(v->type)));
  }
  Result<std::optional<bool>> bool_opt(std::string_view suffix) const {
    const std::string k = key(suffix);
    const Value* v = file_.find(k);
    if (v == nullptr) return std::optional<bool>();
    if (v->type != ValueType::kBool) return error(k, "expected a bool");
    return std::optional<bool>(v->integer != 0);
  }

 private:
  Result<int64_t> check_positive(const std::string& k, const Value* v) const {
    if (v->type == ValueType::kArray) {
      return error(k, "per-layer values (an array) are not supported; expected one integer");
    }
    if (!v->is_integer() || v->integer_overflows || v->integer <= 0 ||
        v->integer > (int64_t{1} << 40)) {
      return error(k, "expected a positive integer");
    }
    return v->integer;
  }

  const File& file_;
  std::string_view name_;
  std::string arch_;
};

// The decimal a float key was written from: the shortest text that reads
// back as that float (1e-6f -> 1e-06, not 9.99999997e-07), so that a
// config.json value survives the round trip through a GGUF file.
double decimal(double stored) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<float>(stored));
  return ec == std::errc() ? std::strtod(std::string(buf, end).c_str(), nullptr) : stored;
}

enum class Family : uint8_t {
  kQwen3Moe,
  kMixtral,
  kOlmoe,
  kQwen2Moe,
  kDeepseek2,
  kGlm4Moe,
  kGptOss
};

constexpr const char* kSupported =
    "qwen3moe, llama (with experts: Mixtral), olmoe, qwen2moe, deepseek2, glm4moe, gpt-oss";

Family family_of(const ModelConfig& c) {
  if (c.model_type == "mixtral") return Family::kMixtral;
  if (c.model_type == "olmoe") return Family::kOlmoe;
  if (c.model_type == "qwen2_moe") return Family::kQwen2Moe;
  if (c.model_type == "deepseek_v2" || c.model_type == "deepseek_v3") return Family::kDeepseek2;
  if (c.model_type == "glm4_moe") return Family::kGlm4Moe;
  if (c.model_type == "gpt_oss") return Family::kGptOss;
  return Family::kQwen3Moe;
}

// llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE values.
constexpr int64_t kGatingSoftmax = 1;
constexpr int64_t kGatingSigmoid = 2;

}  // namespace

namespace {

// rope.scaling.* -> config.json's rope_scaling (null for none). DeepSeek
// writes YaRN's mscale as yarn_log_multiplier = 0.1 * mscale_all_dim (its
// configs set mscale equal to it); gpt-oss's YaRN does not truncate.
Result<OrderedJson> rope_scaling_from_gguf(const Keys& k, Family family) {
  const Value* type = k.find("rope.scaling.type");
  if (type == nullptr) return OrderedJson(nullptr);
  const std::string key = k.key("rope.scaling.type");
  if (type->type != ValueType::kString) return k.error(key, "expected a string");
  if (type->text == "none") return OrderedJson(nullptr);
  if (type->text != "linear" && type->text != "yarn") {
    return k.error(key, "'" + type->text + "' is not supported (supported: none, linear, yarn)");
  }
  OrderedJson r;
  r["rope_type"] = type->text;
  DMOE_ASSIGN_OR_RETURN(double factor, k.number_or("rope.scaling.factor", std::nullopt));
  r["factor"] = decimal(factor);
  if (type->text == "linear") return r;
  DMOE_ASSIGN_OR_RETURN(int64_t original, k.positive("rope.scaling.original_context_length"));
  r["original_max_position_embeddings"] = original;
  DMOE_ASSIGN_OR_RETURN(double beta_fast, k.number_or("rope.scaling.yarn_beta_fast", 32.0));
  DMOE_ASSIGN_OR_RETURN(double beta_slow, k.number_or("rope.scaling.yarn_beta_slow", 1.0));
  r["beta_fast"] = decimal(beta_fast);
  r["beta_slow"] = decimal(beta_slow);
  if (k.has("rope.scaling.yarn_attn_factor")) {
    DMOE_ASSIGN_OR_RETURN(double f, k.number_or("rope.scaling.yarn_attn_factor", std::nullopt));
    r["attention_factor"] = decimal(f);
  }
  DMOE_ASSIGN_OR_RETURN(double ext, k.number_or("rope.scaling.yarn_ext_factor", 1.0));
  if (ext != 1.0 && ext >= 0.0) {
    return k.error(k.key("rope.scaling.yarn_ext_factor"),
                   "only 1 (full YaRN extrapolation mix) is supported");
  }
  if (k.has("rope.scaling.yarn_log_multiplier")) {
    const std::string log_key = k.key("rope.scaling.yarn_log_multiplier");
    if (family != Family::kDeepseek2) {
      return k.error(log_key, "supported for deepseek2 only");
    }
    DMOE_ASSIGN_OR_RETURN(double log_mul,
                          k.number_or("rope.scaling.yarn_log_multiplier", std::nullopt));
    if (log_mul < 0.0) return k.error(log_key, "expected a non-negative number");
    // The decimal it was written from, then x 10 (0.0707f -> 0.0707 -> 0.707).
    const double mscale = decimal(decimal(log_mul) * 10.0);
    r["mscale"] = mscale;
    r["mscale_all_dim"] = mscale;
  }
  if (family == Family::kGptOss) r["truncate"] = false;
  return r;
}

// The expert_gating_func key: `fallback` when absent, else one of `allowed`.
Result<int64_t> gating_func(const Keys& k, int64_t fallback, std::initializer_list<int64_t> allowed,
                            const char* supported) {
  const Value* v = k.find("expert_gating_func");
  if (v == nullptr) return fallback;
  if (v->is_integer() && !v->integer_overflows) {
    for (int64_t a : allowed) {
      if (v->integer == a) return a;
    }
  }
  const std::string got = v->is_integer() ? std::to_string(v->integer) : "a non-integer";
  return k.error(k.key("expert_gating_func"),
                 got + " is not supported (supported: " + supported + ")");
}

// n_group / topk_group from expert_group_count / expert_group_used_count.
Status read_groups(const Keys& k, OrderedJson* c) {
  DMOE_ASSIGN_OR_RETURN(int64_t groups, k.positive_or("expert_group_count", 1));
  DMOE_ASSIGN_OR_RETURN(int64_t used, k.positive_or("expert_group_used_count", groups));
  (*c)["n_group"] = groups;
  (*c)["topk_group"] = used;
  return Status::ok();
}

}  // namespace

Result<std::string> config_json_from_gguf(const File& file, std::string_view file_name) {
  const std::string fname(file_name);
  const Value* arch_value = file.find("general.architecture");
  if (arch_value == nullptr)
    return not_found(fname + ": metadata 'general.architecture' is missing");
  if (arch_value->type != ValueType::kString) {
    return invalid_argument(fname + ": metadata 'general.architecture': expected a string");
  }
  const std::string arch = arch_value->text;
  Keys k(file, file_name, arch);
  OrderedJson c;
  Family family = Family::kQwen3Moe;
  if (arch == "qwen3moe") {
    family = Family::kQwen3Moe;
    c["architectures"] = OrderedJson::array({"Qwen3MoeForCausalLM"});
    c["model_type"] = "qwen3_moe";
  } else if (arch == "llama" && k.has("expert_count")) {
    family = Family::kMixtral;
    c["architectures"] = OrderedJson::array({"MixtralForCausalLM"});
    c["model_type"] = "mixtral";
  } else if (arch == "olmoe") {
    family = Family::kOlmoe;
    c["architectures"] = OrderedJson::array({"OlmoeForCausalLM"});
    c["model_type"] = "olmoe";
  } else if (arch == "qwen2moe") {
    family = Family::kQwen2Moe;
    c["architectures"] = OrderedJson::array({"Qwen2MoeForCausalLM"});
    c["model_type"] = "qwen2_moe";
  } else if (arch == "deepseek2") {
    family = Family::kDeepseek2;
  } else if (arch == "glm4moe") {
    family = Family::kGlm4Moe;
    c["architectures"] = OrderedJson::array({"Glm4MoeForCausalLM"});
    c["model_type"] = "glm4_moe";
  } else if (arch == "gpt-oss") {
    family = Family::kGptOss;
    c["architectures"] = OrderedJson::array({"GptOssForCausalLM"});
    c["model_type"] = "gpt_oss";
  } else {
    return invalid_argument(fname + ": metadata 'general.architecture': '" + arch +
                            "' is not supported (supported: " + kSupported + ")");
  }
  DMOE_ASSIGN_OR_RETURN(int64_t hidden, k.positive("embedding_length"));
  DMOE_ASSIGN_OR_RETURN(int64_t n_blocks, k.positive("block_count"));
  DMOE_ASSIGN_OR_RETURN(int64_t n_heads, k.positive("attention.head_count"));
  DMOE_ASSIGN_OR_RETURN(int64_t n_kv_heads, k.positive_or("attention.head_count_kv", n_heads));
  DMOE_ASSIGN_OR_RETURN(int64_t head_dim, k.positive_or("attention.key_length", hidden / n_heads));
  DMOE_ASSIGN_OR_RETURN(int64_t value_dim, k.positive_or("attention.value_length", head_dim));
  DMOE_ASSIGN_OR_RETURN(int64_t rope_dims, k.positive_or("rope.dimension_count", head_dim));
  // GLM-4.5's multi-token-prediction blocks follow the model's layers.
  DMOE_ASSIGN_OR_RETURN(int64_t nextn, k.non_negative_or("nextn_predict_layers", 0));
  if (nextn >= n_blocks) {
    return k.error(k.key("nextn_predict_layers"),
                   "expected fewer than block_count (" + std::to_string(n_blocks) + ")");
  }
  if (nextn > 0 && family != Family::kGlm4Moe) {
    return k.error(k.key("nextn_predict_layers"), "supported for glm4moe only");
  }
  const int64_t n_layers = n_blocks - nextn;
  if (family == Family::kDeepseek2) {
    if (k.has("attention.key_length_mla") || k.has("attention.value_length_mla")) {
      // Newer converters (kv_b split into attn_k_b / attn_v_b, gguf_kv_b.h)
      // describe the latent cache as one shared head -- key_length = rank +
      // rope, value_length = rank, head_count_kv = 1 -- and a query head in
      // the _mla keys.
      DMOE_ASSIGN_OR_RETURN(const int64_t kv_lora, k.positive("attention.kv_lora_rank"));
      if (head_dim != kv_lora + rope_dims) {
        return k.error(k.key("attention.key_length"),
                       "expected kv_lora_rank + rope.dimension_count (" +
                           std::to_string(kv_lora + rope_dims) + ") beside key_length_mla");
      }
      if (value_dim != kv_lora) {
        return k.error(
            k.key("attention.value_length"),
            "expected kv_lora_rank (" + std::to_string(kv_lora) + ") beside value_length_mla");
      }
      DMOE_ASSIGN_OR_RETURN(head_dim, k.positive("attention.key_length_mla"));
      DMOE_ASSIGN_OR_RETURN(value_dim, k.positive("attention.value_length_mla"));
      if (n_kv_heads == 1) n_kv_heads = n_heads;
    }
    if (n_kv_heads != n_heads) {
      return k.error(k.key("attention.head_count_kv"),
                     std::to_string(n_kv_heads) + " differs from head_count " +
                         std::to_string(n_heads) + " (latent attention has one per head)");
    }
  } else if (value_dim != head_dim) {
    return k.error(k.key("attention.value_length"),
                   std::to_string(value_dim) + " differs from key_length " +
                       std::to_string(head_dim) + " (not supported)");
  }
  if (rope_dims != head_dim && family != Family::kDeepseek2 && family != Family::kGlm4Moe) {
    return k.error(k.key("rope.dimension_count"),
                   std::to_string(rope_dims) + " rotary dimensions of a " +
                       std::to_string(head_dim) +
                       "-dimension head (partial rotary is supported for glm4moe and deepseek2)");
  }
  if (k.has("attention.sliding_window") && family != Family::kGptOss) {
    return k.error(k.key("attention.sliding_window"),
                   "sliding-window attention is supported for gpt-oss only");
  }
  if (k.has("attention.clamp_kqv")) {
    return k.error(k.key("attention.clamp_kqv"), "clamping q, k and v is not supported");
  }
  DMOE_ASSIGN_OR_RETURN(OrderedJson rope_scaling, rope_scaling_from_gguf(k, family));
  DMOE_ASSIGN_OR_RETURN(double eps, k.number_or("attention.layer_norm_rms_epsilon", std::nullopt));
  DMOE_ASSIGN_OR_RETURN(double theta, k.number_or("rope.freq_base", 10000.0));
  DMOE_ASSIGN_OR_RETURN(int64_t n_ctx, k.positive_or("context_length", 4096));
  DMOE_ASSIGN_OR_RETURN(int64_t n_experts, k.positive("expert_count"));
  DMOE_ASSIGN_OR_RETURN(int64_t n_used, k.positive("expert_used_count"));

  // The vocabulary: the embedding's rows (dims[1]), as llama.cpp sizes it.
  const TensorInfo* embed = file.find_tensor("token_embd.weight");
  if (embed == nullptr) return not_found(fname + ": tensor 'token_embd.weight' is missing");
  if (embed->dims.size() != 2) {
    return invalid_argument(fname + ": tensor 'token_embd.weight': expected 2 dimensions");
  }
  DMOE_ASSIGN_OR_RETURN(int64_t vocab, k.positive_or("vocab_size", embed->dims[1]));

  // Dense layers are the ones without a router.
  OrderedJson mlp_only = OrderedJson::array();
  for (int64_t l = 0; l < n_layers; ++l) {
    if (file.find_tensor(gguf_layer_name(l, "ffn_gate_inp.weight")) == nullptr)
      mlp_only.push_back(l);
  }
  const bool has_dense = !mlp_only.empty();
  const bool has_q_bias = file.find_tensor(gguf_layer_name(0, "attn_q.bias")) != nullptr;
  const bool has_qk_norm = file.find_tensor(gguf_layer_name(0, "attn_q_norm.weight")) != nullptr;

  c["vocab_size"] = vocab;
  c["hidden_size"] = hidden;
  c["num_hidden_layers"] = n_layers;
  c["num_attention_heads"] = n_heads;
  c["num_key_value_heads"] = n_kv_heads;
  if (family != Family::kDeepseek2) c["head_dim"] = head_dim;
  c["max_position_embeddings"] = n_ctx;
  c["rope_theta"] = decimal(theta);
  c["rope_scaling"] = rope_scaling;
  c["rms_norm_eps"] = decimal(eps);
  c["tie_word_embeddings"] = file.find_tensor("output.weight") == nullptr;
  c["hidden_act"] = "silu";
  DMOE_ASSIGN_OR_RETURN(std::optional<bool> norm, k.bool_opt("expert_weights_norm"));
  switch (family) {
    case Family::kQwen3Moe: {
      c["attention_bias"] = has_q_bias;
      DMOE_ASSIGN_OR_RETURN(int64_t expert_ff, k.positive("expert_feed_forward_length"));
      DMOE_ASSIGN_OR_RETURN(int64_t dense_ff, k.positive_or("feed_forward_length", expert_ff));
      c["num_experts"] = n_experts;
      c["num_experts_per_tok"] = n_used;
      c["moe_intermediate_size"] = expert_ff;
      c["intermediate_size"] = dense_ff;
      // llama.cpp always renormalises Qwen3-MoE's top-k weights; a file may say otherwise.
      c["norm_topk_prob"] = norm.value_or(true);
      c["mlp_only_layers"] = mlp_only;
      break;
    }
    case Family::kMixtral: {
      c["attention_bias"] = has_q_bias;
      if (has_dense) {
        return invalid_argument(fname + ": tensor '" +
                                gguf_layer_name(mlp_only[0].get<int64_t>(), "ffn_gate_inp.weight") +
                                "' is missing (every Mixtral layer has a router)");
      }
      DMOE_ASSIGN_OR_RETURN(int64_t ff, k.positive("feed_forward_length"));
      DMOE_ASSIGN_OR_RETURN(int64_t expert_ff, k.positive_or("expert_feed_forward_length", ff));
      c["num_local_experts"] = n_experts;
      c["num_experts_per_tok"] = n_used;
      c["intermediate_size"] = expert_ff;
      break;
    }
    case Family::kOlmoe: {
      c.erase("head_dim");  // OLMoE's heads are hidden / n_heads wide
      if (head_dim * n_heads != hidden) {
        return k.error(k.key("attention.key_length"), "expected embedding_length / head_count");
      }
      DMOE_ASSIGN_OR_RETURN(int64_t ff, k.positive("feed_forward_length"));
      DMOE_ASSIGN_OR_RETURN(int64_t expert_ff, k.positive_or("expert_feed_forward_length", ff));
      c["num_experts"] = n_experts;
      c["num_experts_per_tok"] = n_used;
      c["intermediate_size"] = expert_ff;
      // llama.cpp does not renormalise OLMoE's top-k weights.
      c["norm_topk_prob"] = norm.value_or(false);
      c["clip_qkv"] = nullptr;
      break;
    }
    case Family::kQwen2Moe: {
      c["qkv_bias"] = has_q_bias;
      DMOE_ASSIGN_OR_RETURN(int64_t expert_ff, k.positive("expert_feed_forward_length"));
      DMOE_ASSIGN_OR_RETURN(int64_t dense_ff, k.positive_or("feed_forward_length", expert_ff));
      DMOE_ASSIGN_OR_RETURN(int64_t shared_ff, k.positive("expert_shared_feed_forward_length"));
      c["num_experts"] = n_experts;
      c["num_experts_per_tok"] = n_used;
      c["moe_intermediate_size"] = expert_ff;
      c["intermediate_size"] = dense_ff;
      c["shared_expert_intermediate_size"] = shared_ff;
      c["norm_topk_prob"] = norm.value_or(false);
      c["decoder_sparse_step"] = 1;
      c["mlp_only_layers"] = mlp_only;
      c["use_sliding_window"] = false;
      break;
    }
    case Family::kDeepseek2: {
      DMOE_ASSIGN_OR_RETURN(int64_t gating,
                            gating_func(k, kGatingSoftmax, {kGatingSoftmax, kGatingSigmoid},
                                        "1 = softmax (V2), 2 = sigmoid (V3)"));
      const bool v3 = gating == kGatingSigmoid;
      c["architectures"] =
          OrderedJson::array({v3 ? "DeepseekV3ForCausalLM" : "DeepseekV2ForCausalLM"});
      c["model_type"] = v3 ? "deepseek_v3" : "deepseek_v2";
      if (rope_dims >= head_dim) {
        return k.error(k.key("rope.dimension_count"),
                       "expected fewer than key_length (" + std::to_string(head_dim) + ")");
      }
      DMOE_ASSIGN_OR_RETURN(int64_t q_lora, k.non_negative_or("attention.q_lora_rank", 0));
      DMOE_ASSIGN_OR_RETURN(int64_t kv_lora, k.positive("attention.kv_lora_rank"));
      c["q_lora_rank"] = q_lora > 0 ? OrderedJson(q_lora) : OrderedJson(nullptr);
      c["kv_lora_rank"] = kv_lora;
      c["qk_nope_head_dim"] = head_dim - rope_dims;
      c["qk_rope_head_dim"] = rope_dims;
      c["v_head_dim"] = value_dim;
      c["attention_bias"] = false;
      DMOE_ASSIGN_OR_RETURN(int64_t expert_ff, k.positive("expert_feed_forward_length"));
      DMOE_ASSIGN_OR_RETURN(int64_t dense_ff, k.positive_or("feed_forward_length", expert_ff));
      DMOE_ASSIGN_OR_RETURN(int64_t n_shared, k.non_negative_or("expert_shared_count", 0));
      DMOE_ASSIGN_OR_RETURN(int64_t leading, k.non_negative_or("leading_dense_block_count", 0));
      DMOE_ASSIGN_OR_RETURN(double scale, k.number_or("expert_weights_scale", 1.0));
      c["n_routed_experts"] = n_experts;
      c["num_experts_per_tok"] = n_used;
      c["moe_intermediate_size"] = expert_ff;
      c["intermediate_size"] = dense_ff;
      c["n_shared_experts"] = n_shared;
      c["first_k_dense_replace"] = leading;
      c["moe_layer_freq"] = 1;
      c["routed_scaling_factor"] = decimal(scale);
      DMOE_RETURN_IF_ERROR(read_groups(k, &c));
      c["scoring_func"] = v3 ? "sigmoid" : "softmax";
      if (v3) {
        c["topk_method"] = "noaux_tc";
        c["norm_topk_prob"] = norm.value_or(true);
      } else {
        c["topk_method"] = c["n_group"].get<int64_t>() > 1 ? "group_limited_greedy" : "greedy";
        c["norm_topk_prob"] = norm.value_or(false);
      }
      break;
    }
    case Family::kGlm4Moe: {
      DMOE_RETURN_IF_ERROR(
          gating_func(k, kGatingSigmoid, {kGatingSigmoid}, "2 = sigmoid").status());
      c["attention_bias"] = has_q_bias;
      c["use_qk_norm"] = has_qk_norm;
      c["partial_rotary_factor"] = static_cast<double>(rope_dims) / static_cast<double>(head_dim);
      DMOE_ASSIGN_OR_RETURN(int64_t expert_ff, k.positive("expert_feed_forward_length"));
      DMOE_ASSIGN_OR_RETURN(int64_t dense_ff, k.positive_or("feed_forward_length", expert_ff));
      DMOE_ASSIGN_OR_RETURN(int64_t n_shared, k.non_negative_or("expert_shared_count", 0));
      DMOE_ASSIGN_OR_RETURN(int64_t leading, k.non_negative_or("leading_dense_block_count", 0));
      DMOE_ASSIGN_OR_RETURN(double scale, k.number_or("expert_weights_scale", 1.0));
      c["n_routed_experts"] = n_experts;
      c["num_experts_per_tok"] = n_used;
      c["moe_intermediate_size"] = expert_ff;
      c["intermediate_size"] = dense_ff;
      c["n_shared_experts"] = n_shared;
      c["first_k_dense_replace"] = leading;
      c["routed_scaling_factor"] = decimal(scale);
      c["norm_topk_prob"] = norm.value_or(true);
      DMOE_RETURN_IF_ERROR(read_groups(k, &c));
      break;
    }
    case Family::kGptOss: {
      c["attention_bias"] = true;
      DMOE_ASSIGN_OR_RETURN(int64_t window, k.positive("attention.sliding_window"));
      DMOE_ASSIGN_OR_RETURN(int64_t ff, k.positive_or("feed_forward_length", 0));
      DMOE_ASSIGN_OR_RETURN(int64_t expert_ff, k.positive_or("expert_feed_forward_length", ff));
      if (expert_ff == 0) {
        return not_found(fname + ": metadata '" + k.key("expert_feed_forward_length") +
                         "' is missing");
      }
      // llama.cpp's gpt-oss: even layers slide, odd ones attend to all.
      OrderedJson types = OrderedJson::array();
      for (int64_t l = 0; l < n_layers; ++l) {
        types.push_back(l % 2 == 0 ? "sliding_attention" : "full_attention");
      }
      c["sliding_window"] = window;
      c["layer_types"] = types;
      c["num_local_experts"] = n_experts;
      c["num_experts_per_tok"] = n_used;
      c["intermediate_size"] = expert_ff;
      c["swiglu_limit"] = 7.0;  // fixed in llama.cpp's gpt-oss graph, as in the published code
      c["quantization_config"] = {{"quant_method", "mxfp4"}};
      break;
    }
  }
  // End-of-sequence ids: eos, then end-of-turn (a chat model's second stop
  // token, which llama.cpp also stops on).
  OrderedJson eos = OrderedJson::array();
  for (const char* id_key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                             "tokenizer.ggml.eot_token_id"}) {
    const Value* v = file.find(id_key);
    if (v == nullptr) continue;
    if (!v->is_integer() || v->integer_overflows || v->integer < 0 || v->integer >= vocab) {
      return invalid_argument(fname + ": metadata '" + id_key + "': expected a token id below " +
                              std::to_string(vocab));
    }
    if (std::string_view(id_key) == "tokenizer.ggml.bos_token_id") {
      c["bos_token_id"] = v->integer;
    } else if (eos.empty() || eos[0].get<int64_t>() != v->integer) {
      eos.push_back(v->integer);
    }
  }
  if (eos.size() == 1) c["eos_token_id"] = eos[0];
  if (eos.size() > 1) c["eos_token_id"] = eos;
  return c.dump(2);
}

std::string_view gguf_architecture(const ModelConfig& config) {
  switch (family_of(config)) {
    case Family::kMixtral:
      return "llama";
    case Family::kOlmoe:
      return "olmoe";
    case Family::kQwen2Moe:
      return "qwen2moe";
    case Family::kDeepseek2:
      return "deepseek2";
    case Family::kGlm4Moe:
      return "glm4moe";
    case Family::kGptOss:
      return "gpt-oss";
    case Family::kQwen3Moe:
      break;
  }
  return "qwen3moe";
}

namespace {

void rope_scaling_to_gguf(const ModelConfig& c, GgufWriter* w, const std::string& arch) {
  const RopeScaling& r = c.rope_scaling;
  auto key = [&](const char* suffix) { return arch + ".rope.scaling." + suffix; };
  if (r.type == RopeScaling::Type::kNone) return;
  w->set_string(key("type"), r.type == RopeScaling::Type::kLinear ? "linear" : "yarn");
  w->set_f32(key("factor"), static_cast<float>(r.factor));
  if (r.type != RopeScaling::Type::kYarn) return;
  w->set_u32(key("original_context_length"),
             static_cast<uint32_t>(r.original_max_position_embeddings));
  w->set_f32(key("yarn_beta_fast"), static_cast<float>(r.beta_fast));
  w->set_f32(key("yarn_beta_slow"), static_cast<float>(r.beta_slow));
  if (r.attention_factor > 0.0) {
    w->set_f32(key("yarn_attn_factor"), static_cast<float>(r.attention_factor));
  }
  if (family_of(c) == Family::kDeepseek2 && r.mscale_all_dim > 0.0) {
    w->set_f32(key("yarn_log_multiplier"), static_cast<float>(0.1 * r.mscale_all_dim));
  }
}

}  // namespace

void config_to_gguf(const ModelConfig& c, GgufWriter* w) {
  const Family family = family_of(c);
  const std::string arch(gguf_architecture(c));
  auto key = [&](const char* suffix) { return arch + "." + suffix; };
  auto u32 = [&](const char* suffix, int64_t v) {
    w->set_u32(key(suffix), static_cast<uint32_t>(v));
  };
  w->set_string("general.architecture", arch);
  u32("context_length", c.max_position_embeddings);
  u32("embedding_length", c.hidden_size);
  u32("block_count", c.n_layers);
  const int64_t ff = family == Family::kMixtral || family == Family::kOlmoe ||
                             family == Family::kGptOss || c.dense_intermediate_size <= 0
                         ? c.moe_intermediate_size
                         : c.dense_intermediate_size;
  u32("feed_forward_length", ff);
  u32("expert_feed_forward_length", c.moe_intermediate_size);
  u32("attention.head_count", c.n_heads);
  u32("attention.head_count_kv", c.n_kv_heads);
  if (family == Family::kDeepseek2) {
    // The per-head widths under the plain keys (the form with attn_kv_b).
    u32("attention.key_length", c.head_dim);
    u32("attention.value_length", c.v_head_dim);
    if (c.q_lora_rank > 0) u32("attention.q_lora_rank", c.q_lora_rank);
    u32("attention.kv_lora_rank", c.kv_lora_rank);
  } else {
    u32("attention.key_length", c.head_dim);
    u32("attention.value_length", c.head_dim);
  }
  u32("rope.dimension_count", c.rope_dim());
  w->set_f32(key("rope.freq_base"), static_cast<float>(c.rope_theta));
  rope_scaling_to_gguf(c, w, arch);
  w->set_f32(key("attention.layer_norm_rms_epsilon"), c.rms_norm_eps);
  u32("expert_count", c.n_experts);
  u32("expert_used_count", c.n_experts_per_token);
  u32("vocab_size", c.vocab_size);
  if (family != Family::kMixtral && family != Family::kGptOss) {
    w->set_bool(key("expert_weights_norm"), c.norm_topk_prob);
  }
  if (family == Family::kQwen2Moe) {
    u32("expert_shared_feed_forward_length", c.shared_intermediate_size);
  }
  if (family == Family::kDeepseek2 || family == Family::kGlm4Moe) {
    int64_t leading = 0;
    while (leading < c.n_layers && !c.layer_is_moe[static_cast<size_t>(leading)]) ++leading;
    u32("leading_dense_block_count", leading);
    u32("expert_shared_count", c.shared_intermediate_size / c.moe_intermediate_size);
    w->set_f32(key("expert_weights_scale"), static_cast<float>(c.routed_scaling_factor));
    u32("expert_gating_func",
        c.router_scoring == RouterScoring::kSigmoid ? kGatingSigmoid : kGatingSoftmax);
    if (c.n_group > 1) {
      u32("expert_group_count", c.n_group);
      u32("expert_group_used_count", c.topk_group);
    }
  }
  if (family == Family::kGlm4Moe) u32("nextn_predict_layers", 0);
  if (family == Family::kGptOss) u32("attention.sliding_window", c.sliding_window);
  // The stop tokens generation uses (config.json / generation_config.json):
  // the first as eos, a second as end-of-turn (written after the tokenizer's
  // keys, so they win).
  if (!c.eos_token_ids.empty()) {
    w->set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(c.eos_token_ids[0]));
  }
  if (c.eos_token_ids.size() > 1) {
    w->set_u32("tokenizer.ggml.eot_token_id", static_cast<uint32_t>(c.eos_token_ids[1]));
  }
  if (c.bos_token_id) {
    w->set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*c.bos_token_id));
  }
}

Status gguf_supports(const ModelConfig& c) {
  const std::string what =
      c.hf_architecture + " as GGUF (" + std::string(gguf_architecture(c)) + "): ";
  bool known = false;
  for (const char* t : {"qwen3_moe", "mixtral", "olmoe", "qwen2_moe", "deepseek_v2", "deepseek_v3",
                        "glm4_moe", "gpt_oss"}) {
    known = known || c.model_type == t;
  }
  if (!known) {
    return invalid_argument(c.hf_architecture +
                            ": no GGUF names for this architecture here (GGUF: " + kSupported +
                            ")");
  }
  const Family family = family_of(c);
  const RopeScaling& r = c.rope_scaling;
  if (r.type == RopeScaling::Type::kLlama3) {
    return invalid_argument(what +
                            "rope_scaling llama3 is not written to GGUF files here "
                            "(supported: linear, yarn)");
  }
  if (r.type == RopeScaling::Type::kYarn) {
    if (r.truncate != (family != Family::kGptOss)) {
      return invalid_argument(what + "rope_scaling.truncate " + (r.truncate ? "true" : "false") +
                              " has no GGUF key (gpt-oss: false, the others: true)");
    }
    const bool deepseek_mscale = family == Family::kDeepseek2 && r.mscale == r.mscale_all_dim;
    if ((r.mscale > 0.0 || r.mscale_all_dim > 0.0) && !deepseek_mscale) {
      return invalid_argument(what +
                              "rope_scaling.mscale / mscale_all_dim have a GGUF key only "
                              "for deepseek2, and only equal (yarn_log_multiplier)");
    }
  }
  if (c.sliding_window > 0) {
    bool alternating = family == Family::kGptOss;
    for (size_t l = 0; alternating && l < c.layer_sliding.size(); ++l) {
      alternating = c.layer_sliding[l] == (l % 2 == 0);
    }
    if (!alternating) {
      return invalid_argument(what +
                              "sliding_window is written for gpt-oss's pattern only "
                              "(even layers slide)");
    }
  }
  if (c.expert_activation == ExpertActivation::kClampedSwiGLU &&
      (c.swiglu_limit != 7.0f || c.swiglu_alpha != 1.702f)) {
    return invalid_argument(what + "swiglu_limit must be 7 (fixed in llama.cpp's gpt-oss)");
  }
  if (family == Family::kDeepseek2 || family == Family::kGlm4Moe) {
    int64_t leading = 0;
    while (leading < c.n_layers && !c.layer_is_moe[static_cast<size_t>(leading)]) ++leading;
    for (int64_t l = leading; l < c.n_layers; ++l) {
      if (!c.layer_is_moe[static_cast<size_t>(l)]) {
        return invalid_argument(what + "dense layer " + std::to_string(l) +
                                " after the leading ones has no GGUF key (moe_layer_freq 1 "
                                "only)");
      }
    }
    if (c.shared_intermediate_size % c.moe_intermediate_size != 0) {
      return invalid_argument(what + "the shared experts' width is not a whole number of experts");
    }
  }
  if (family == Family::kDeepseek2 && c.router_scoring != RouterScoring::kSigmoid &&
      c.norm_topk_prob && c.routed_scaling_factor != 1.0) {
    return invalid_argument(what +
                            "routed_scaling_factor with norm_topk_prob (DeepSeek-V2 "
                            "applies one or the other)");
  }
  return Status::ok();
}

}  // namespace dancemoe::gguf
