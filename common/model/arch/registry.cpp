#include <array>

#include "common/model/arch/architecture.h"

namespace dancemoe::arch {

std::span<const ArchitectureSpec> supported_architectures() {
  static const std::array<ArchitectureSpec, 8> kSpecs = {
      qwen3_moe_spec(),   mixtral_spec(),     olmoe_spec(),    qwen2_moe_spec(),
      deepseek_v2_spec(), deepseek_v3_spec(), glm4_moe_spec(), gpt_oss_spec()};
  return kSpecs;
}

Status read_common_fields(const JsonField& f, ModelConfig* c) {
  DMOE_ASSIGN_OR_RETURN(c->vocab_size, f.positive_int("vocab_size"));
  DMOE_ASSIGN_OR_RETURN(c->hidden_size, f.positive_int("hidden_size"));
  DMOE_ASSIGN_OR_RETURN(c->n_layers, f.positive_int("num_hidden_layers"));
  DMOE_ASSIGN_OR_RETURN(c->n_heads, f.positive_int("num_attention_heads"));
  DMOE_ASSIGN_OR_RETURN(c->n_kv_heads, f.positive_int_or("num_key_value_heads", c->n_heads));
  if (c->hidden_size % c->n_heads != 0 && !f.has("head_dim")) {
    return f.member_error("head_dim", "a positive integer (hidden_size is not divisible by heads)");
  }
  DMOE_ASSIGN_OR_RETURN(c->head_dim, f.positive_int_or("head_dim", c->hidden_size / c->n_heads));
  DMOE_ASSIGN_OR_RETURN(c->max_position_embeddings,
                        f.positive_int_or("max_position_embeddings", 4096));
  DMOE_ASSIGN_OR_RETURN(c->rope_theta, f.positive_number_or("rope_theta", 10000.0));
  DMOE_ASSIGN_OR_RETURN(double eps, f.positive_number_or("rms_norm_eps", 1e-6));
  c->rms_norm_eps = static_cast<float>(eps);
  DMOE_ASSIGN_OR_RETURN(c->tie_word_embeddings, f.bool_or("tie_word_embeddings", false));
  DMOE_ASSIGN_OR_RETURN(c->attention_bias, f.bool_or("attention_bias", false));
  DMOE_RETURN_IF_ERROR(read_rope_scaling(f, c));
  DMOE_ASSIGN_OR_RETURN(std::vector<int64_t> eos, f.int_or_int_list("eos_token_id"));
  for (int64_t id : eos) c->eos_token_ids.push_back(static_cast<int32_t>(id));
  if (f.has("bos_token_id")) {
    DMOE_ASSIGN_OR_RETURN(int64_t bos, f.non_negative_int_or("bos_token_id", 0));
    c->bos_token_id = static_cast<int32_t>(bos);
  }
  return Status::ok();
}

Status refuse_unless(const JsonField& f, std::string_view field, const nlohmann::json& allowed,
                     std::string_view what) {
  if (!f.has(field) || f.json().at(std::string(field)) == allowed) return Status::ok();
  return f.member_error(field, what);
}

}  // namespace dancemoe::arch
