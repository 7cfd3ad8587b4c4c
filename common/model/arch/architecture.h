// The registry of supported HuggingFace architectures. Each architecture is
// one file in this folder defining an ArchitectureSpec: how to read its
// config.json into a ModelConfig -- its fields, its tensor names, and the
// blocks its forward graph is built from (the attention variant, the
// router, shared experts, which layers are dense or slide), which every
// backend executes (common/inference/transformer.h). To add one, add a file
// and list it in registry.cpp; only genuinely new math needs a new block.
#pragma once

#include <span>
#include <string_view>

#include "common/base/json_field.h"
#include "common/model/model_config.h"

namespace dancemoe::arch {

struct ArchitectureSpec {
  std::string_view hf_architecture;  // config.json "architectures"[0]
  std::string_view model_type;       // config.json "model_type"
  // Fills the architecture-specific parts of *config (the common fields are
  // already read by read_common_fields()).
  Status (*parse)(const JsonField& fields, ModelConfig* config);
};

std::span<const ArchitectureSpec> supported_architectures();

// Reads the fields every Llama-style decoder shares (sizes, heads, rope and
// its scaling, norm eps, ...).
Status read_common_fields(const JsonField& fields, ModelConfig* config);
// rope_scaling (rope_scaling.cpp); called by read_common_fields.
Status read_rope_scaling(const JsonField& fields, ModelConfig* config);
// Refuses a field the runtime does not implement when it is set to
// anything but `allowed` (null or absent always pass): "<file>: <field>:
// expected <what>, got <value>".
Status refuse_unless(const JsonField& fields, std::string_view field, const nlohmann::json& allowed,
                     std::string_view what);

// Readers of blocks several families share (moe_blocks.cpp).
// DeepSeek's multi-head latent attention: q_lora_rank, kv_lora_rank,
// qk_nope_head_dim, qk_rope_head_dim, v_head_dim (and the YaRN mscale of
// its softmax scale); call after read_common_fields.
Status read_latent_attention(const JsonField& fields, ModelConfig* config);
// n_routed_experts, num_experts_per_tok, moe_intermediate_size,
// intermediate_size (the dense layers), n_shared_experts,
// first_k_dense_replace, moe_layer_freq.
Status read_leading_dense_layers(const JsonField& fields, ModelConfig* config);
// The sigmoid "noaux_tc" router: e_score_correction_bias, n_group,
// topk_group, norm_topk_prob, routed_scaling_factor.
Status read_noaux_router(const JsonField& fields, ModelConfig* config);

// One spec per architecture file.
const ArchitectureSpec& qwen3_moe_spec();
const ArchitectureSpec& mixtral_spec();
const ArchitectureSpec& olmoe_spec();
const ArchitectureSpec& qwen2_moe_spec();
const ArchitectureSpec& deepseek_v2_spec();
const ArchitectureSpec& deepseek_v3_spec();
const ArchitectureSpec& glm4_moe_spec();
const ArchitectureSpec& gpt_oss_spec();

}  // namespace dancemoe::arch
