// GLM-4.5 / GLM-4.5-Air (Glm4MoeForCausalLM), following transformers'
// modeling_glm4_moe: grouped attention with q/k/v biases (attention_bias),
// per-head q/k RMSNorm when use_qk_norm, and rotary embedding on the first
// partial_rotary_factor of each head ("rotate half" within those); layers
// [0, first_k_dense_replace) are dense MLPs, the rest MoE layers with
// n_shared_experts shared experts and DeepSeek-V3's sigmoid "noaux_tc"
// router (e_score_correction_bias, n_group / topk_group, norm_topk_prob,
// routed_scaling_factor). The multi-token-prediction layers
// (num_nextn_predict_layers) are not run.
#include <cmath>

#include "common/model/arch/architecture.h"

namespace dancemoe::arch {
namespace {

Status parse_glm4_moe(const JsonField& f, ModelConfig* c) {
  DMOE_ASSIGN_OR_RETURN(bool qk_norm, f.bool_or("use_qk_norm", false));
  c->qk_norm = qk_norm ? QkNormKind::kPerHead : QkNormKind::kNone;
  DMOE_ASSIGN_OR_RETURN(double partial, f.positive_number_or("partial_rotary_factor", 1.0));
  if (partial > 1.0) return f.member_error("partial_rotary_factor", "a number in (0, 1]");
  c->rotary_dim = static_cast<int64_t>(static_cast<double>(c->head_dim) * partial);
  DMOE_RETURN_IF_ERROR(read_leading_dense_layers(f, c));
  if (!f.has("rms_norm_eps")) c->rms_norm_eps = 1e-5f;
  return read_noaux_router(f, c);
}

}  // namespace

const ArchitectureSpec& glm4_moe_spec() {
  static const ArchitectureSpec kSpec{"Glm4MoeForCausalLM", "glm4_moe", parse_glm4_moe};
  return kSpec;
}

}  // namespace dancemoe::arch
