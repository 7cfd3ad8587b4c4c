// ModelConfig: the architecture-independent description of a decoder-only
// MoE transformer that the loader and the forward pass work from. Each
// supported HuggingFace architecture (common/model/arch/<arch>.cpp) fills
// one in from config.json and names its tensors through TensorNaming, so
// adding an architecture is one file plus, only for genuinely new math
// (e.g. MLA attention), a new component in the forward pass.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

// How router logits become expert weights.
enum class RouterScoring : uint8_t {
  // softmax over all experts, then top-k; with norm_topk_prob the k weights
  // are renormalised to sum to 1 (Qwen3-MoE, OLMoE, Qwen2-MoE).
  kSoftmaxThenTopK,
  // top-k of the logits, then softmax over those k (Mixtral). Equal to the
  // above with renormalisation, computed in the order the model defines.
  kTopKThenSoftmax,
};

enum class QkNormKind : uint8_t {
  kNone,
  kPerHead,  // RMSNorm over each head's head_dim (Qwen3)
  kFull,     // RMSNorm over the whole projected q / k vector (OLMoE)
};

// Where a tensor sits in the model; the naming turns it into a HF name.
enum class TensorRole : uint8_t {
  kEmbed,
  kFinalNorm,
  kLmHead,
  kInputNorm,
  kPostAttentionNorm,
  kQ,
  kK,
  kV,
  kO,
  kQBias,
  kKBias,
  kVBias,
  kQNorm,
  kKNorm,
  kRouter,
  kExpertGate,
  kExpertUp,
  kExpertDown,
  kDenseGate,
  kDenseUp,
  kDenseDown,
};

// Norm weights and biases: one vector per layer (or model), never a matrix.
bool is_vector_role(TensorRole role);

// HuggingFace tensor name patterns; "{L}" is the layer index, "{E}" the expert.
struct TensorNaming {
  std::string embed = "model.embed_tokens.weight";
  std::string final_norm = "model.norm.weight";
  std::string lm_head = "lm_head.weight";
  std::string input_norm = "model.layers.{L}.input_layernorm.weight";
  std::string post_attention_norm = "model.layers.{L}.post_attention_layernorm.weight";
  std::string attention_prefix = "model.layers.{L}.self_attn.";  // + q_proj.weight, ...
  std::string router = "model.layers.{L}.mlp.gate.weight";
  std::string expert_gate = "model.layers.{L}.mlp.experts.{E}.gate_proj.weight";
  std::string expert_up = "model.layers.{L}.mlp.experts.{E}.up_proj.weight";
  std::string expert_down = "model.layers.{L}.mlp.experts.{E}.down_proj.weight";
  std::string dense_gate = "model.layers.{L}.mlp.gate_proj.weight";
  std::string dense_up = "model.layers.{L}.mlp.up_proj.weight";
  std::string dense_down = "model.layers.{L}.mlp.down_proj.weight";
};

struct ModelConfig {
  std::string hf_architecture;  // e.g. "Qwen3MoeForCausalLM"
  std::string model_type;       // e.g. "qwen3_moe"

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rope_theta = 10000.0;
  float rms_norm_eps = 1e-6f;
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  QkNormKind qk_norm = QkNormKind::kNone;

  int64_t n_experts = 0;
  int64_t n_experts_per_token = 0;
  int64_t moe_intermediate_size = 0;    // per expert
  int64_t dense_intermediate_size = 0;  // dense MLP layers among MoE layers
  bool norm_topk_prob = false;
  RouterScoring router_scoring = RouterScoring::kSoftmaxThenTopK;
  std::vector<bool> layer_is_moe;  // [n_layers]

  std::vector<int32_t> eos_token_ids;  // config.json, overridden by generation_config.json
  std::optional<int32_t> bos_token_id;

  TensorNaming naming;

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  int64_t n_moe_layers() const;

  // The HF name of a tensor; `layer`/`expert` are ignored where not used.
  std::string tensor_name(TensorRole role, int64_t layer = 0, int64_t expert = 0) const;
  // The shape config.json implies for that tensor ([rows, cols] or [n]).
  std::vector<int64_t> expected_shape(TensorRole role) const;

  // Checks the relations between fields (heads divisible, k <= n_experts ...).
  Status validate(const std::string& file_name) const;
};

// Reads <dir>/config.json and, when present, <dir>/generation_config.json.
// Unsupported architectures are an error that lists the supported ones.
Result<ModelConfig> load_model_config(const std::filesystem::path& model_dir);
Result<ModelConfig> parse_model_config(const std::string& config_json_text,
                                       const std::string& file_name);

}  // namespace dancemoe
