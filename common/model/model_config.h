// ModelConfig: the architecture-independent description of a decoder-only
// MoE transformer that the loader and the forward pass work from. Each
// supported HuggingFace architecture (common/model/arch/<arch>.cpp) fills
// one in from config.json and names its tensors through TensorNaming, so
// adding an architecture is one file plus, only for genuinely new math
// (e.g. MLA attention), a new component in the forward pass.
#pragma once

#include <array>
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
  // are renormalised to sum to 1 (Qwen3-MoE, OLMoE, Qwen2-MoE, DeepSeek-V2).
  kSoftmaxThenTopK,
  // top-k of the logits, then softmax over those k (Mixtral, gpt-oss). Equal
  // to the above with renormalisation, computed in the order the model defines.
  kTopKThenSoftmax,
  // sigmoid of each logit; the choice may add a per-expert correction bias
  // (e_score_correction_bias) that the weights do not see (DeepSeek-V3, GLM-4.5).
  kSigmoid,
};

// How the group-limited choice scores a group of experts (n_group > 1).
enum class GroupScore : uint8_t {
  kMax,      // the group's best expert (DeepSeek-V2's group_limited_greedy)
  kTop2Sum,  // the sum of its two best (DeepSeek-V3's noaux_tc)
};

enum class QkNormKind : uint8_t {
  kNone,
  kPerHead,  // RMSNorm over each head's head_dim (Qwen3, GLM-4.5 with use_qk_norm)
  kFull,     // RMSNorm over the whole projected q / k vector (OLMoE)
};

// Which attention block a model's layers use.
enum class AttentionKind : uint8_t {
  kGrouped,  // multi-head / grouped-query attention over cached keys and values
  kLatent,   // DeepSeek's multi-head latent attention (MLA) over a compressed cache
};

// How rotary embedding pairs the dimensions it rotates.
enum class RopeLayout : uint8_t {
  kHalves,  // x[i] with x[i + d/2] ("rotate half": Llama, GPT-NeoX)
  kPairs,   // x[2i] with x[2i + 1] (DeepSeek's MLA)
};

// config.json's rope_scaling (common/model/arch/rope_scaling.cpp reads it;
// common/inference/rope.h computes the frequencies, as HF's
// modeling_rope_utils defines them).
struct RopeScaling {
  enum class Type : uint8_t { kNone, kLinear, kYarn, kLlama3 };
  Type type = Type::kNone;
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;
  // YaRN
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 0.0;            // 0: unset
  double mscale_all_dim = 0.0;    // 0: unset
  double attention_factor = 0.0;  // 0: derived from factor and the mscales
  bool truncate = true;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  friend bool operator==(const RopeScaling&, const RopeScaling&) = default;
};

// YaRN's mscale: 0.1 * m * ln(scale) + 1 for scale > 1, else 1.
double yarn_mscale(double scale, double m);

// The experts' activation (and the dense MLPs' when they share it).
enum class ExpertActivation : uint8_t {
  kSwiGLU,         // down(silu(gate x) * up x)
  kClampedSwiGLU,  // gpt-oss: g = min(gate, limit), u = clamp(up, +-limit),
                   // down((u + 1) * g * sigmoid(alpha g)) (+ biases)
};

// Where a tensor sits in the model; the naming turns it into a HF name.
// Values are fixed (they are not written anywhere, but keep the order).
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
  kOBias,             // [hidden] (gpt-oss)
  kSinks,             // [n_heads] attention sinks (gpt-oss)
  kQA,                // MLA: [q_lora_rank, hidden]
  kQANorm,            // MLA: [q_lora_rank]
  kQB,                // MLA: [n_heads * qk_head_dim, q_lora_rank]
  kKvA,               // MLA: [kv_lora_rank + rope_dim, hidden]
  kKvANorm,           // MLA: [kv_lora_rank]
  kKvB,               // MLA: [n_heads * (nope_dim + v_head_dim), kv_lora_rank]
  kRouterBias,        // [n_experts] added to the router logits (gpt-oss)
  kRouterChoiceBias,  // [n_experts] e_score_correction_bias: steers the choice only
  kSharedGate,        // shared expert(s), one SwiGLU of shared_intermediate_size
  kSharedUp,
  kSharedDown,
  kSharedExpertGate,  // [1, hidden]: sigmoid gate of the shared expert (Qwen2-MoE)
  kExpertGateBias,    // [moe_intermediate] (gpt-oss)
  kExpertUpBias,
  kExpertDownBias,  // [hidden]
};
inline constexpr int kTensorRoleCount = static_cast<int>(TensorRole::kExpertDownBias) + 1;

// Norm weights and biases: one vector per layer (or model), never a matrix.
bool is_vector_role(TensorRole role);
// The routed experts' tensors (one per layer and expert); everything else is
// the dense part.
bool is_expert_role(TensorRole role);
// The expert's matrices (gate, up, down), not its biases.
bool is_expert_matrix_role(TensorRole role);

// HuggingFace tensor name patterns, one per role; "{L}" is the layer index,
// "{E}" the expert. The defaults are the Llama / Qwen names; each
// architecture file overrides what differs.
struct TensorNaming {
  TensorNaming();
  std::string& operator[](TensorRole role) { return patterns[static_cast<size_t>(role)]; }
  const std::string& operator[](TensorRole role) const {
    return patterns[static_cast<size_t>(role)];
  }
  std::array<std::string, kTensorRoleCount> patterns;
};

// The stacked tensors in which gpt-oss publishes each MoE layer's routed
// experts ("{L}" the layer): [n_experts, ...] each, gate and up rows
// interleaved (gate = even rows), weights as MXFP4 blocks + scales (U8).
// The per-expert tensors the runtime reads are views of them
// (common/model/stacked_experts.h).
struct StackedExpertNames {
  std::string gate_up_blocks;  // [E, 2 inter, hidden / 32, 16]
  std::string gate_up_scales;  // [E, 2 inter, hidden / 32]
  std::string gate_up_bias;    // [E, 2 inter]
  std::string down_blocks;     // [E, hidden, inter / 32, 16]
  std::string down_scales;     // [E, hidden, inter / 32]
  std::string down_bias;       // [E, hidden]
};

struct ModelConfig {
  std::string hf_architecture;  // e.g. "Qwen3MoeForCausalLM"
  std::string model_type;       // e.g. "qwen3_moe"

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;  // of q and k (MLA: qk_nope_head_dim + qk_rope_head_dim)
  int64_t max_position_embeddings = 0;
  double rope_theta = 10000.0;
  float rms_norm_eps = 1e-6f;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q, k, v biases
  QkNormKind qk_norm = QkNormKind::kNone;

  // --- attention variants (defaults: plain grouped-query attention) ---
  AttentionKind attention = AttentionKind::kGrouped;
  bool attention_out_bias = false;  // o_proj bias (gpt-oss)
  bool attention_sinks = false;     // a learned per-head logit in every softmax (gpt-oss)
  // Layers with layer_sliding[l] attend to the last sliding_window positions
  // (the token itself included); empty: every layer attends to all.
  int64_t sliding_window = 0;
  std::vector<bool> layer_sliding;  // [n_layers] or empty
  // Leading dimensions of each q / k head that rotate (0: all of head_dim;
  // GLM-4.5's partial_rotary_factor; MLA: qk_rope_head_dim).
  int64_t rotary_dim = 0;
  RopeLayout rope_layout = RopeLayout::kHalves;
  RopeScaling rope_scaling;
  // Multiplies the softmax scale 1/sqrt(head_dim) (DeepSeek's YaRN mscale^2).
  double attention_scale_multiplier = 1.0;
  // MLA (attention == kLatent); n_kv_heads == n_heads, rotary_dim is the rope part.
  int64_t q_lora_rank = 0;  // 0: q_proj directly (V2-Lite); else q_a -> norm -> q_b
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;

  // --- MoE ---
  int64_t n_experts = 0;  // routed experts per MoE layer
  int64_t n_experts_per_token = 0;
  int64_t moe_intermediate_size = 0;    // per expert
  int64_t dense_intermediate_size = 0;  // dense MLP layers among MoE layers
  bool norm_topk_prob = false;
  RouterScoring router_scoring = RouterScoring::kSoftmaxThenTopK;
  bool router_bias = false;         // the router is an affine map (gpt-oss)
  bool router_choice_bias = false;  // e_score_correction_bias (kSigmoid)
  int64_t n_group = 1;              // group-limited choice: experts in n_group groups,
  int64_t topk_group = 1;           // tokens choose among the topk_group best groups
  GroupScore group_score = GroupScore::kMax;
  // Multiplies the chosen weights (after any renormalisation).
  double routed_scaling_factor = 1.0;
  // Added to the sum when renormalising top-k weights (DeepSeek: 1e-20).
  float topk_norm_epsilon = 0.0f;
  // Shared expert(s) of every MoE layer, one SwiGLU of this width (0: none);
  // part of the dense model. With shared_expert_gate its output is scaled
  // by sigmoid(shared_expert_gate x) (Qwen2-MoE).
  int64_t shared_intermediate_size = 0;
  bool shared_expert_gate = false;
  ExpertActivation expert_activation = ExpertActivation::kSwiGLU;
  float swiglu_alpha = 1.702f;     // kClampedSwiGLU
  float swiglu_limit = 7.0f;       // kClampedSwiGLU
  bool expert_bias = false;        // gate / up / down biases per expert (gpt-oss)
  std::vector<bool> layer_is_moe;  // [n_layers]

  std::vector<int32_t> eos_token_ids;  // config.json, overridden by generation_config.json
  std::optional<int32_t> bos_token_id;

  TensorNaming naming;
  // Set when the routed experts are stored stacked (gpt-oss); naming then
  // holds the names of the per-expert views.
  std::optional<StackedExpertNames> stacked_experts;

  // Width of q (all heads) and of k / v (all kv heads) of grouped attention;
  // MLA: q is n_heads * head_dim too.
  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  // Width of the attention output that o_proj reads.
  int64_t attention_out_dim() const {
    return n_heads * (attention == AttentionKind::kLatent ? v_head_dim : head_dim);
  }
  // Dimensions of each head that rotate.
  int64_t rope_dim() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  // Floats the KV cache keeps per layer and position: keys (MLA: the
  // normalised latent and the rotated k_pe), values (MLA: none).
  int64_t cache_key_dim() const {
    return attention == AttentionKind::kLatent ? kv_lora_rank + rope_dim() : kv_dim();
  }
  int64_t cache_value_dim() const { return attention == AttentionKind::kLatent ? 0 : kv_dim(); }
  bool is_sliding(int64_t layer) const {
    return sliding_window > 0 && !layer_sliding.empty() &&
           layer_sliding[static_cast<size_t>(layer)];
  }
  int64_t n_moe_layers() const;

  // The HF name of a tensor; `layer`/`expert` are ignored where not used.
  std::string tensor_name(TensorRole role, int64_t layer = 0, int64_t expert = 0) const;
  // The shape config.json implies for that tensor ([rows, cols] or [n]).
  std::vector<int64_t> expected_shape(TensorRole role) const;

  // Checks the relations between fields (heads divisible, k <= n_experts ...).
  Status validate(const std::string& file_name) const;
};

// A tensor name pattern with "{L}" / "{E}" replaced by layer / expert.
std::string tensor_name_from_pattern(const std::string& pattern, int64_t layer, int64_t expert = 0);

// One tensor a model needs: its role, layer and expert.
struct RequiredTensor {
  TensorRole role;
  int64_t layer;
  int64_t expert;
};
// Every tensor the configuration's blocks read, in a stable order (the
// model, then each layer: norms, attention, feed-forward, experts).
std::vector<RequiredTensor> required_tensors(const ModelConfig& config);

// Reads <dir>/config.json and, when present, <dir>/generation_config.json.
// Unsupported architectures are an error that lists the supported ones.
Result<ModelConfig> load_model_config(const std::filesystem::path& model_dir);
Result<ModelConfig> parse_model_config(const std::string& config_json_text,
                                       const std::string& file_name);

}  // namespace dancemoe
