#include "common/model/model_config.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/base/file_util.h"
#include "common/model/arch/architecture.h"

namespace dancemoe {
namespace {

std::string substitute(const std::string& pattern, int64_t layer, int64_t expert) {
  std::string out;
  out.reserve(pattern.size() + 8);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern.compare(i, 3, "{L}") == 0) {
      out += std::to_string(layer);
      i += 2;
    } else if (pattern.compare(i, 3, "{E}") == 0) {
      out += std::to_string(expert);
      i += 2;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

Result<nlohmann::json> parse_json_object(const std::string& text, const std::string& file_name) {
  DMOE_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_document(text, file_name));
  if (!j.is_object()) return invalid_argument(file_name + ": expected a JSON object");
  return j;
}

std::string supported_list() {
  std::string names;
  for (const auto& spec : arch::supported_architectures()) {
    if (!names.empty()) names += ", ";
    names += spec.hf_architecture;
  }
  return names;
}

}  // namespace

double yarn_mscale(double scale, double m) {
  return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
}

int64_t ModelConfig::n_moe_layers() const {
  int64_t n = 0;
  for (bool moe : layer_is_moe) n += moe ? 1 : 0;
  return n;
}

TensorNaming::TensorNaming() {
  auto& n = *this;
  const std::string attn = "model.layers.{L}.self_attn.";
  const std::string mlp = "model.layers.{L}.mlp.";
  n[TensorRole::kEmbed] = "model.embed_tokens.weight";
  n[TensorRole::kFinalNorm] = "model.norm.weight";
  n[TensorRole::kLmHead] = "lm_head.weight";
  n[TensorRole::kInputNorm] = "model.layers.{L}.input_layernorm.weight";
  n[TensorRole::kPostAttentionNorm] = "model.layers.{L}.post_attention_layernorm.weight";
  n[TensorRole::kQ] = attn + "q_proj.weight";
  n[TensorRole::kK] = attn + "k_proj.weight";
  n[TensorRole::kV] = attn + "v_proj.weight";
  n[TensorRole::kO] = attn + "o_proj.weight";
  n[TensorRole::kQBias] = attn + "q_proj.bias";
  n[TensorRole::kKBias] = attn + "k_proj.bias";
  n[TensorRole::kVBias] = attn + "v_proj.bias";
  n[TensorRole::kOBias] = attn + "o_proj.bias";
  n[TensorRole::kQNorm] = attn + "q_norm.weight";
  n[TensorRole::kKNorm] = attn + "k_norm.weight";
  n[TensorRole::kSinks] = attn + "sinks";
  n[TensorRole::kQA] = attn + "q_a_proj.weight";
  n[TensorRole::kQANorm] = attn + "q_a_layernorm.weight";
  n[TensorRole::kQB] = attn + "q_b_proj.weight";
  n[TensorRole::kKvA] = attn + "kv_a_proj_with_mqa.weight";
  n[TensorRole::kKvANorm] = attn + "kv_a_layernorm.weight";
  n[TensorRole::kKvB] = attn + "kv_b_proj.weight";
  n[TensorRole::kRouter] = mlp + "gate.weight";
  n[TensorRole::kRouterBias] = mlp + "gate.bias";
  n[TensorRole::kRouterChoiceBias] = mlp + "gate.e_score_correction_bias";
  n[TensorRole::kExpertGate] = mlp + "experts.{E}.gate_proj.weight";
  n[TensorRole::kExpertUp] = mlp + "experts.{E}.up_proj.weight";
  n[TensorRole::kExpertDown] = mlp + "experts.{E}.down_proj.weight";
  n[TensorRole::kExpertGateBias] = mlp + "experts.{E}.gate_proj.bias";
  n[TensorRole::kExpertUpBias] = mlp + "experts.{E}.up_proj.bias";
  n[TensorRole::kExpertDownBias] = mlp + "experts.{E}.down_proj.bias";
  n[TensorRole::kDenseGate] = mlp + "gate_proj.weight";
  n[TensorRole::kDenseUp] = mlp + "up_proj.weight";
  n[TensorRole::kDenseDown] = mlp + "down_proj.weight";
  n[TensorRole::kSharedGate] = mlp + "shared_experts.gate_proj.weight";
  n[TensorRole::kSharedUp] = mlp + "shared_experts.up_proj.weight";
  n[TensorRole::kSharedDown] = mlp + "shared_experts.down_proj.weight";
  n[TensorRole::kSharedExpertGate] = mlp + "shared_expert_gate.weight";
}

bool is_vector_role(TensorRole role) {
  switch (role) {
    case TensorRole::kFinalNorm:
    case TensorRole::kInputNorm:
    case TensorRole::kPostAttentionNorm:
    case TensorRole::kQBias:
    case TensorRole::kKBias:
    case TensorRole::kVBias:
    case TensorRole::kOBias:
    case TensorRole::kQNorm:
    case TensorRole::kKNorm:
    case TensorRole::kSinks:
    case TensorRole::kQANorm:
    case TensorRole::kKvANorm:
    case TensorRole::kRouterBias:
    case TensorRole::kRouterChoiceBias:
    case TensorRole::kExpertGateBias:
    case TensorRole::kExpertUpBias:
    case TensorRole::kExpertDownBias:
      return true;
    default:
      return false;
  }
}

bool is_expert_matrix_role(TensorRole role) {
  return role == TensorRole::kExpertGate || role == TensorRole::kExpertUp ||
         role == TensorRole::kExpertDown;
}

bool is_expert_role(TensorRole role) {
  return is_expert_matrix_role(role) || role == TensorRole::kExpertGateBias ||
         role == TensorRole::kExpertUpBias || role == TensorRole::kExpertDownBias;
}

std::string ModelConfig::tensor_name(TensorRole role, int64_t layer, int64_t expert) const {
  if (role == TensorRole::kLmHead && tie_word_embeddings) role = TensorRole::kEmbed;
  return substitute(naming[role], layer, expert);
}

std::string tensor_name_from_pattern(const std::string& pattern, int64_t layer, int64_t expert) {
  return substitute(pattern, layer, expert);
}

std::vector<int64_t> ModelConfig::expected_shape(TensorRole role) const {
  const int64_t rope = rope_dim();
  switch (role) {
    case TensorRole::kEmbed:
    case TensorRole::kLmHead:
      return {vocab_size, hidden_size};
    case TensorRole::kFinalNorm:
    case TensorRole::kInputNorm:
    case TensorRole::kPostAttentionNorm:
    case TensorRole::kOBias:
    case TensorRole::kExpertDownBias:
      return {hidden_size};
    case TensorRole::kQ:
      return {q_dim(), hidden_size};
    case TensorRole::kK:
    case TensorRole::kV:
      return {kv_dim(), hidden_size};
    case TensorRole::kO:
      return {hidden_size, attention_out_dim()};
    case TensorRole::kQBias:
      return {q_dim()};
    case TensorRole::kKBias:
    case TensorRole::kVBias:
      return {kv_dim()};
    case TensorRole::kQNorm:
      return {qk_norm == QkNormKind::kFull ? q_dim() : head_dim};
    case TensorRole::kKNorm:
      return {qk_norm == QkNormKind::kFull ? kv_dim() : head_dim};
    case TensorRole::kSinks:
      return {n_heads};
    case TensorRole::kQA:
      return {q_lora_rank, hidden_size};
    case TensorRole::kQANorm:
      return {q_lora_rank};
    case TensorRole::kQB:
      return {q_dim(), q_lora_rank};
    case TensorRole::kKvA:
      return {kv_lora_rank + rope, hidden_size};
    case TensorRole::kKvANorm:
      return {kv_lora_rank};
    case TensorRole::kKvB:
      return {n_heads * (qk_nope_head_dim + v_head_dim), kv_lora_rank};
    case TensorRole::kRouter:
      return {n_experts, hidden_size};
    case TensorRole::kRouterBias:
    case TensorRole::kRouterChoiceBias:
      return {n_experts};
    case TensorRole::kExpertGate:
    case TensorRole::kExpertUp:
      return {moe_intermediate_size, hidden_size};
    case TensorRole::kExpertDown:
      return {hidden_size, moe_intermediate_size};
    case TensorRole::kExpertGateBias:
    case TensorRole::kExpertUpBias:
      return {moe_intermediate_size};
    case TensorRole::kDenseGate:
    case TensorRole::kDenseUp:
      return {dense_intermediate_size, hidden_size};
    case TensorRole::kDenseDown:
      return {hidden_size, dense_intermediate_size};
    case TensorRole::kSharedGate:
    case TensorRole::kSharedUp:
      return {shared_intermediate_size, hidden_size};
    case TensorRole::kSharedDown:
      return {hidden_size, shared_intermediate_size};
    case TensorRole::kSharedExpertGate:
      return {1, hidden_size};
  }
  return {};
}

std::vector<RequiredTensor> required_tensors(const ModelConfig& c) {
  std::vector<RequiredTensor> out = {{TensorRole::kEmbed, 0, 0}, {TensorRole::kFinalNorm, 0, 0}};
  if (!c.tie_word_embeddings) out.push_back({TensorRole::kLmHead, 0, 0});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    auto add = [&](std::initializer_list<TensorRole> roles) {
      for (TensorRole r : roles) out.push_back({r, l, 0});
    };
    add({TensorRole::kInputNorm, TensorRole::kPostAttentionNorm});
    if (c.attention == AttentionKind::kLatent) {
      if (c.q_lora_rank > 0) {
        add({TensorRole::kQA, TensorRole::kQANorm, TensorRole::kQB});
      } else {
        add({TensorRole::kQ});
      }
      add({TensorRole::kKvA, TensorRole::kKvANorm, TensorRole::kKvB, TensorRole::kO});
    } else {
      add({TensorRole::kQ, TensorRole::kK, TensorRole::kV, TensorRole::kO});
      if (c.attention_bias) add({TensorRole::kQBias, TensorRole::kKBias, TensorRole::kVBias});
      if (c.qk_norm != QkNormKind::kNone) add({TensorRole::kQNorm, TensorRole::kKNorm});
    }
    if (c.attention_out_bias) add({TensorRole::kOBias});
    if (c.attention_sinks) add({TensorRole::kSinks});
    if (!c.layer_is_moe[static_cast<size_t>(l)]) {
      add({TensorRole::kDenseGate, TensorRole::kDenseUp, TensorRole::kDenseDown});
      continue;
    }
    add({TensorRole::kRouter});
    if (c.router_bias) add({TensorRole::kRouterBias});
    if (c.router_choice_bias) add({TensorRole::kRouterChoiceBias});
    if (c.shared_intermediate_size > 0) {
      add({TensorRole::kSharedGate, TensorRole::kSharedUp, TensorRole::kSharedDown});
      if (c.shared_expert_gate) add({TensorRole::kSharedExpertGate});
    }
    for (int64_t e = 0; e < c.n_experts; ++e) {
      for (TensorRole r :
           {TensorRole::kExpertGate, TensorRole::kExpertUp, TensorRole::kExpertDown}) {
        out.push_back({r, l, e});
      }
      if (c.expert_bias) {
        for (TensorRole r : {TensorRole::kExpertGateBias, TensorRole::kExpertUpBias,
                             TensorRole::kExpertDownBias}) {
          out.push_back({r, l, e});
        }
      }
    }
  }
  return out;
}

Status ModelConfig::validate(const std::string& file_name) const {
  auto fail = [&](const std::string& what) { return invalid_argument(file_name + ": " + what); };
  if (n_heads % n_kv_heads != 0) {
    return fail("num_attention_heads (" + std::to_string(n_heads) +
                ") must be a multiple of num_key_value_heads (" + std::to_string(n_kv_heads) + ")");
  }
  if (rope_dim() % 2 != 0 || rope_dim() > head_dim) {
    return fail("the rotary dimensions (" + std::to_string(rope_dim()) +
                ") must be even and at most head_dim (" + std::to_string(head_dim) + ")");
  }
  if (!layer_sliding.empty() && static_cast<int64_t>(layer_sliding.size()) != n_layers) {
    return fail("layer_types has " + std::to_string(layer_sliding.size()) + " entries for " +
                std::to_string(n_layers) + " layers");
  }
  if (attention == AttentionKind::kLatent) {
    if (n_kv_heads != n_heads) return fail("latent attention has one key/value head per head");
    if (kv_lora_rank <= 0 || qk_nope_head_dim <= 0 || v_head_dim <= 0) {
      return fail("kv_lora_rank, qk_nope_head_dim and v_head_dim must be positive");
    }
  }
  if (n_group < 1 || topk_group < 1 || topk_group > n_group || n_experts % n_group != 0) {
    return fail("n_group (" + std::to_string(n_group) + ") must divide the experts (" +
                std::to_string(n_experts) + ") and topk_group (" + std::to_string(topk_group) +
                ") be in [1, n_group]");
  }
  if (n_group > 1 && topk_group * (n_experts / n_group) < n_experts_per_token) {
    return fail("topk_group (" + std::to_string(topk_group) + ") groups of " +
                std::to_string(n_experts / n_group) + " experts cannot hold num_experts_per_tok (" +
                std::to_string(n_experts_per_token) + ")");
  }
  // The wire protocol addresses an expert by 16-bit layer and expert indices.
  if (n_layers > 65535) {
    return fail("num_hidden_layers (" + std::to_string(n_layers) + ") exceeds 65535");
  }
  if (n_experts > 65535) {
    return fail("the number of experts (" + std::to_string(n_experts) + ") exceeds 65535");
  }
  // Sizes are bounded before anything is sized from them: the tensor list,
  // the expert slots and the scheduler's tables have one entry per (layer,
  // expert), and a forged config.json must not make a process allocate
  // beyond memory (it aborted on num_experts 2147483647) before the
  // safetensors headers are compared with it.
  struct Bound {
    const char* field;
    int64_t value;
    int64_t max;
  };
  for (const Bound& b :
       {Bound{"vocab_size", vocab_size, int64_t{1} << 24},
        Bound{"hidden_size", hidden_size, int64_t{1} << 17},
        Bound{"num_attention_heads", n_heads, 4096}, Bound{"num_key_value_heads", n_kv_heads, 4096},
        Bound{"head_dim", head_dim, 4096},
        Bound{"the expert intermediate size", moe_intermediate_size, int64_t{1} << 20},
        Bound{"intermediate_size", dense_intermediate_size, int64_t{1} << 20},
        Bound{"the shared expert intermediate size", shared_intermediate_size, int64_t{1} << 20},
        Bound{"q_lora_rank", q_lora_rank, int64_t{1} << 16},
        Bound{"kv_lora_rank", kv_lora_rank, int64_t{1} << 16},
        Bound{"qk_nope_head_dim", qk_nope_head_dim, 4096}, Bound{"v_head_dim", v_head_dim, 4096},
        Bound{"sliding_window", sliding_window, int64_t{1} << 24},
        Bound{"max_position_embeddings", max_position_embeddings, int64_t{1} << 24}}) {
    if (b.value > b.max) {
      return fail(std::string(b.field) + " (" + std::to_string(b.value) + ") exceeds " +
                  std::to_string(b.max));
    }
  }
  if (n_layers * n_experts > (int64_t{1} << 20)) {
    return fail("num_hidden_layers x experts (" + std::to_string(n_layers) + " x " +
                std::to_string(n_experts) + ") exceeds 1048576 experts in all");
  }
  if (n_experts_per_token > n_experts) {
    return fail("num_experts_per_tok (" + std::to_string(n_experts_per_token) +
                ") exceeds the number of experts (" + std::to_string(n_experts) + ")");
  }
  if (static_cast<int64_t>(layer_is_moe.size()) != n_layers) return fail("layer kinds not set");
  for (size_t l = 0; l < layer_is_moe.size(); ++l) {
    if (!layer_is_moe[l] && dense_intermediate_size <= 0) {
      return fail("layer " + std::to_string(l) +
                  " is a dense MLP layer but intermediate_size is not set");
    }
  }
  for (int32_t id : eos_token_ids) {
    if (id < 0 || id >= vocab_size) {
      return fail("eos_token_id " + std::to_string(id) + " is outside the vocabulary of " +
                  std::to_string(vocab_size));
    }
  }
  return Status::ok();
}

Result<ModelConfig> parse_model_config(const std::string& text, const std::string& file_name) {
  DMOE_ASSIGN_OR_RETURN(nlohmann::json j, parse_json_object(text, file_name));
  JsonField fields(j, file_name);
  std::string hf_architecture;
  auto archs = j.find("architectures");
  if (archs != j.end() && archs->is_array() && !archs->empty() && (*archs)[0].is_string()) {
    hf_architecture = (*archs)[0].get<std::string>();
  }
  std::string model_type = j.value("model_type", std::string());
  const arch::ArchitectureSpec* spec = nullptr;
  for (const auto& candidate : arch::supported_architectures()) {
    if ((!hf_architecture.empty() && candidate.hf_architecture == hf_architecture) ||
        (hf_architecture.empty() && candidate.model_type == model_type)) {
      spec = &candidate;
    }
  }
  if (spec == nullptr) {
    return invalid_argument(file_name + ": unsupported architecture '" +
                            (hf_architecture.empty() ? model_type : hf_architecture) +
                            "' (supported: " + supported_list() + ")");
  }
  ModelConfig config;
  config.hf_architecture = std::string(spec->hf_architecture);
  config.model_type = std::string(spec->model_type);
  DMOE_RETURN_IF_ERROR(arch::read_common_fields(fields, &config));
  DMOE_RETURN_IF_ERROR(spec->parse(fields, &config));
  DMOE_RETURN_IF_ERROR(config.validate(file_name));
  return config;
}

Result<ModelConfig> load_model_config(const std::filesystem::path& model_dir) {
  const std::filesystem::path config_path = model_dir / "config.json";
  DMOE_ASSIGN_OR_RETURN(std::string text, read_file(config_path));
  DMOE_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(text, config_path.string()));

  const std::filesystem::path generation_path = model_dir / "generation_config.json";
  if (std::filesystem::exists(generation_path)) {
    DMOE_ASSIGN_OR_RETURN(std::string gen_text, read_file(generation_path));
    DMOE_ASSIGN_OR_RETURN(nlohmann::json gen,
                          parse_json_object(gen_text, generation_path.string()));
    const std::string gen_source = generation_path.string();
    JsonField gen_fields(gen, gen_source);
    DMOE_ASSIGN_OR_RETURN(std::vector<int64_t> eos, gen_fields.int_or_int_list("eos_token_id"));
    if (!eos.empty()) {
      config.eos_token_ids.clear();
      for (int64_t id : eos) config.eos_token_ids.push_back(static_cast<int32_t>(id));
    }
    DMOE_RETURN_IF_ERROR(config.validate(generation_path.string()));
  }
  return config;
}

}  // namespace dancemoe
