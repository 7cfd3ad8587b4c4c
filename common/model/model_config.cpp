#include "common/model/model_config.h"

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

int64_t ModelConfig::n_moe_layers() const {
  int64_t n = 0;
  for (bool moe : layer_is_moe) n += moe ? 1 : 0;
  return n;
}

bool is_vector_role(TensorRole role) {
  switch (role) {
    case TensorRole::kFinalNorm:
    case TensorRole::kInputNorm:
    case TensorRole::kPostAttentionNorm:
    case TensorRole::kQBias:
    case TensorRole::kKBias:
    case TensorRole::kVBias:
    case TensorRole::kQNorm:
    case TensorRole::kKNorm:
      return true;
    default:
      return false;
  }
}

std::string ModelConfig::tensor_name(TensorRole role, int64_t layer, int64_t expert) const {
  const std::string attn = substitute(naming.attention_prefix, layer, expert);
  switch (role) {
    case TensorRole::kEmbed:
      return naming.embed;
    case TensorRole::kFinalNorm:
      return naming.final_norm;
    case TensorRole::kLmHead:
      return tie_word_embeddings ? naming.embed : naming.lm_head;
    case TensorRole::kInputNorm:
      return substitute(naming.input_norm, layer, expert);
    case TensorRole::kPostAttentionNorm:
      return substitute(naming.post_attention_norm, layer, expert);
    case TensorRole::kQ:
      return attn + "q_proj.weight";
    case TensorRole::kK:
      return attn + "k_proj.weight";
    case TensorRole::kV:
      return attn + "v_proj.weight";
    case TensorRole::kO:
      return attn + "o_proj.weight";
    case TensorRole::kQBias:
      return attn + "q_proj.bias";
    case TensorRole::kKBias:
      return attn + "k_proj.bias";
    case TensorRole::kVBias:
      return attn + "v_proj.bias";
    case TensorRole::kQNorm:
      return attn + "q_norm.weight";
    case TensorRole::kKNorm:
      return attn + "k_norm.weight";
    case TensorRole::kRouter:
      return substitute(naming.router, layer, expert);
    case TensorRole::kExpertGate:
      return substitute(naming.expert_gate, layer, expert);
    case TensorRole::kExpertUp:
      return substitute(naming.expert_up, layer, expert);
    case TensorRole::kExpertDown:
      return substitute(naming.expert_down, layer, expert);
    case TensorRole::kDenseGate:
      return substitute(naming.dense_gate, layer, expert);
    case TensorRole::kDenseUp:
      return substitute(naming.dense_up, layer, expert);
    case TensorRole::kDenseDown:
      return substitute(naming.dense_down, layer, expert);
  }
  return {};
}

std::vector<int64_t> ModelConfig::expected_shape(TensorRole role) const {
  switch (role) {
    case TensorRole::kEmbed:
    case TensorRole::kLmHead:
      return {vocab_size, hidden_size};
    case TensorRole::kFinalNorm:
    case TensorRole::kInputNorm:
    case TensorRole::kPostAttentionNorm:
      return {hidden_size};
    case TensorRole::kQ:
      return {q_dim(), hidden_size};
    case TensorRole::kK:
    case TensorRole::kV:
      return {kv_dim(), hidden_size};
    case TensorRole::kO:
      return {hidden_size, q_dim()};
    case TensorRole::kQBias:
      return {q_dim()};
    case TensorRole::kKBias:
    case TensorRole::kVBias:
      return {kv_dim()};
    case TensorRole::kQNorm:
      return {qk_norm == QkNormKind::kFull ? q_dim() : head_dim};
    case TensorRole::kKNorm:
      return {qk_norm == QkNormKind::kFull ? kv_dim() : head_dim};
    case TensorRole::kRouter:
      return {n_experts, hidden_size};
    case TensorRole::kExpertGate:
    case TensorRole::kExpertUp:
      return {moe_intermediate_size, hidden_size};
    case TensorRole::kExpertDown:
      return {hidden_size, moe_intermediate_size};
    case TensorRole::kDenseGate:
    case TensorRole::kDenseUp:
      return {dense_intermediate_size, hidden_size};
    case TensorRole::kDenseDown:
      return {hidden_size, dense_intermediate_size};
  }
  return {};
}

Status ModelConfig::validate(const std::string& file_name) const {
  auto fail = [&](const std::string& what) { return invalid_argument(file_name + ": " + what); };
  if (n_heads % n_kv_heads != 0) {
    return fail("num_attention_heads (" + std::to_string(n_heads) +
                ") must be a multiple of num_key_value_heads (" + std::to_string(n_kv_heads) + ")");
  }
  if (head_dim % 2 != 0) return fail("head_dim must be even for rotary embeddings");
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
