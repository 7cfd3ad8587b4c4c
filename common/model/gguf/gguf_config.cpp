#include "common/model/gguf/gguf_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace dancemoe::gguf {
namespace {

using Json = nlohmann::ordered_json;

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

std::string layer_name(int64_t layer, std::string_view what) {
  return "blk." + std::to_string(layer) + "." + std::string(what);
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
  Json c;
  if (arch == "qwen3moe") {
    c["architectures"] = Json::array({"Qwen3MoeForCausalLM"});
    c["model_type"] = "qwen3_moe";
  } else if (arch == "llama" && k.has("expert_count")) {
    c["architectures"] = Json::array({"MixtralForCausalLM"});
    c["model_type"] = "mixtral";
  } else {
    return invalid_argument(
        fname + ": metadata 'general.architecture': '" + arch +
        "' is not supported (supported: qwen3moe, and llama with experts, i.e. Mixtral)");
  }
  DMOE_ASSIGN_OR_RETURN(int64_t hidden, k.positive("embedding_length"));
  DMOE_ASSIGN_OR_RETURN(int64_t n_layers, k.positive("block_count"));
  DMOE_ASSIGN_OR_RETURN(int64_t n_heads, k.positive("attention.head_count"));
  DMOE_ASSIGN_OR_RETURN(int64_t n_kv_heads, k.positive_or("attention.head_count_kv", n_heads));
  DMOE_ASSIGN_OR_RETURN(int64_t head_dim, k.positive_or("attention.key_length", hidden / n_heads));
  DMOE_ASSIGN_OR_RETURN(int64_t value_dim, k.positive_or("attention.value_length", head_dim));
  if (value_dim != head_dim) {
    return k.error(k.key("attention.value_length"),
                   std::to_string(value_dim) + " differs from key_length " +
                       std::to_string(head_dim) + " (not supported)");
  }
  DMOE_ASSIGN_OR_RETURN(int64_t rope_dims, k.positive_or("rope.dimension_count", head_dim));
  if (rope_dims != head_dim) {
    return k.error(k.key("rope.dimension_count"),
                   std::to_string(rope_dims) + " rotary dimensions of a " +
                       std::to_string(head_dim) +
                       "-dimension head (partial rotary is not supported)");
  }
  if (const Value* v = file.find(k.key("rope.scaling.type")); v != nullptr && v->text != "none") {
    return k.error(k.key("rope.scaling.type"),
                   "'" + v->text + "' (rope scaling is not supported yet)");
  }
  if (k.has("attention.sliding_window")) {
    return k.error(k.key("attention.sliding_window"),
                   "sliding-window attention is not supported yet");
  }
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
  Json mlp_only = Json::array();
  for (int64_t l = 0; l < n_layers; ++l) {
    if (file.find_tensor(layer_name(l, "ffn_gate_inp.weight")) == nullptr) mlp_only.push_back(l);
  }
  const bool has_dense = !mlp_only.empty();

  c["vocab_size"] = vocab;
  c["hidden_size"] = hidden;
  c["num_hidden_layers"] = n_layers;
  c["num_attention_heads"] = n_heads;
  c["num_key_value_heads"] = n_kv_heads;
  c["head_dim"] = head_dim;
  c["max_position_embeddings"] = n_ctx;
  c["rope_theta"] = theta;
  c["rms_norm_eps"] = eps;
  c["tie_word_embeddings"] = file.find_tensor("output.weight") == nullptr;
  c["attention_bias"] = file.find_tensor(layer_name(0, "attn_q.bias")) != nullptr;
  if (arch == "qwen3moe") {
    DMOE_ASSIGN_OR_RETURN(int64_t expert_ff, k.positive("expert_feed_forward_length"));
    DMOE_ASSIGN_OR_RETURN(int64_t dense_ff, k.positive_or("feed_forward_length", expert_ff));
    // llama.cpp always renormalises Qwen3-MoE's top-k weights; a file may say otherwise.
    DMOE_ASSIGN_OR_RETURN(std::optional<bool> norm, k.bool_opt("expert_weights_norm"));
    c["num_experts"] = n_experts;
    c["num_experts_per_tok"] = n_used;
    c["moe_intermediate_size"] = expert_ff;
    c["intermediate_size"] = dense_ff;
    c["norm_topk_prob"] = norm.value_or(true);
    c["mlp_only_layers"] = mlp_only;
  } else {
    if (has_dense) {
      return invalid_argument(fname + ": tensor '" +
                              layer_name(mlp_only[0].get<int64_t>(), "ffn_gate_inp.weight") +
                              "' is missing (every Mixtral layer has a router)");
    }
    DMOE_ASSIGN_OR_RETURN(int64_t ff, k.positive("feed_forward_length"));
    DMOE_ASSIGN_OR_RETURN(int64_t expert_ff, k.positive_or("expert_feed_forward_length", ff));
    c["num_local_experts"] = n_experts;
    c["num_experts_per_tok"] = n_used;
    c["intermediate_size"] = expert_ff;
  }
  // End-of-sequence ids: eos, then end-of-turn (a chat model's second stop
  // token, which llama.cpp also stops on).
  Json eos = Json::array();
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
  return config.model_type == "mixtral" ? "llama" : "qwen3moe";
}

void config_to_gguf(const ModelConfig& c, GgufWriter* w) {
  const std::string arch(gguf_architecture(c));
  auto key = [&](const char* suffix) { return arch + "." + suffix; };
  w->set_string("general.architecture", arch);
  w->set_u32(key("context_length"), static_cast<uint32_t>(c.max_position_embeddings));
  w->set_u32(key("embedding_length"), static_cast<uint32_t>(c.hidden_size));
  w->set_u32(key("block_count"), static_cast<uint32_t>(c.n_layers));
  const int64_t ff = c.model_type == "mixtral"       ? c.moe_intermediate_size
                     : c.dense_intermediate_size > 0 ? c.dense_intermediate_size
                                                     : c.moe_intermediate_size;
  w->set_u32(key("feed_forward_length"), static_cast<uint32_t>(ff));
  w->set_u32(key("expert_feed_forward_length"), static_cast<uint32_t>(c.moe_intermediate_size));
  w->set_u32(key("attention.head_count"), static_cast<uint32_t>(c.n_heads));
  w->set_u32(key("attention.head_count_kv"), static_cast<uint32_t>(c.n_kv_heads));
  w->set_u32(key("attention.key_length"), static_cast<uint32_t>(c.head_dim));
  w->set_u32(key("attention.value_length"), static_cast<uint32_t>(c.head_dim));
  w->set_u32(key("rope.dimension_count"), static_cast<uint32_t>(c.head_dim));
  w->set_f32(key("rope.freq_base"), static_cast<float>(c.rope_theta));
  w->set_f32(key("attention.layer_norm_rms_epsilon"), c.rms_norm_eps);
  w->set_u32(key("expert_count"), static_cast<uint32_t>(c.n_experts));
  w->set_u32(key("expert_used_count"), static_cast<uint32_t>(c.n_experts_per_token));
  w->set_u32(key("vocab_size"), static_cast<uint32_t>(c.vocab_size));
  if (c.model_type != "mixtral") w->set_bool(key("expert_weights_norm"), c.norm_topk_prob);
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

std::string gguf_tensor_name(TensorRole role, int64_t layer) {
  switch (role) {
    case TensorRole::kEmbed:
      return "token_embd.weight";
    case TensorRole::kFinalNorm:
      return "output_norm.weight";
    case TensorRole::kLmHead:
      return "output.weight";
    case TensorRole::kInputNorm:
      return layer_name(layer, "attn_norm.weight");
    case TensorRole::kPostAttentionNorm:
      return layer_name(layer, "ffn_norm.weight");
    case TensorRole::kQ:
      return layer_name(layer, "attn_q.weight");
    case TensorRole::kK:
      return layer_name(layer, "attn_k.weight");
    case TensorRole::kV:
      return layer_name(layer, "attn_v.weight");
    case TensorRole::kO:
      return layer_name(layer, "attn_output.weight");
    case TensorRole::kQBias:
      return layer_name(layer, "attn_q.bias");
    case TensorRole::kKBias:
      return layer_name(layer, "attn_k.bias");
    case TensorRole::kVBias:
      return layer_name(layer, "attn_v.bias");
    case TensorRole::kQNorm:
      return layer_name(layer, "attn_q_norm.weight");
    case TensorRole::kKNorm:
      return layer_name(layer, "attn_k_norm.weight");
    case TensorRole::kRouter:
      return layer_name(layer, "ffn_gate_inp.weight");
    case TensorRole::kExpertGate:
      return layer_name(layer, "ffn_gate_exps.weight");
    case TensorRole::kExpertUp:
      return layer_name(layer, "ffn_up_exps.weight");
    case TensorRole::kExpertDown:
      return layer_name(layer, "ffn_down_exps.weight");
    case TensorRole::kDenseGate:
      return layer_name(layer, "ffn_gate.weight");
    case TensorRole::kDenseUp:
      return layer_name(layer, "ffn_up.weight");
    case TensorRole::kDenseDown:
      return layer_name(layer, "ffn_down.weight");
    default:  // blocks of families without GGUF names here (gguf_supports refuses them)
      return {};
  }
}

Status gguf_supports(const ModelConfig& c) {
  if (c.model_type != "qwen3_moe" && c.model_type != "mixtral") {
    return invalid_argument(c.hf_architecture +
                            ": no GGUF names for this architecture here (GGUF: "
                            "Qwen3MoeForCausalLM, MixtralForCausalLM)");
  }
  if (c.sliding_window > 0 || c.rope_scaling.type != RopeScaling::Type::kNone) {
    return invalid_argument(c.hf_architecture +
                            ": sliding_window and rope_scaling are not written to GGUF files yet");
  }
  return Status::ok();
}

std::string gguf_single_expert_name(TensorRole role, int64_t layer, int64_t expert) {
  const char* what = role == TensorRole::kExpertGate ? "ffn_gate."
                     : role == TensorRole::kExpertUp ? "ffn_up."
                                                     : "ffn_down.";
  return layer_name(layer, what + std::to_string(expert) + ".weight");
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
