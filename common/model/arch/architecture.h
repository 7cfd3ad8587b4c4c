// The registry of supported HuggingFace architectures. Each architecture is
// one file in this folder defining an ArchitectureSpec: how to read its
// config.json into a ModelConfig (including its tensor naming and routing
// conventions). To add one (OLMoE, Qwen2-MoE, DeepSeek-V2), add a file and
// list it in registry.cpp.
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

// Reads the fields every Llama-style decoder shares (sizes, heads, rope, norm eps, ...).
Status read_common_fields(const JsonField& fields, ModelConfig* config);

// One spec per architecture file.
const ArchitectureSpec& qwen3_moe_spec();
const ArchitectureSpec& mixtral_spec();

}  // namespace dancemoe::arch
