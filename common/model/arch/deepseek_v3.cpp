// DeepSeek-V3 (DeepseekV3ForCausalLM), following transformers'
// modeling_deepseek_v3 (and DeepSeek's published code): DeepSeek-V2's
// latent attention and leading dense layers with shared experts, and the
// "noaux_tc" router: sigmoid scores; the choice adds e_score_correction_bias
// and keeps the topk_group of n_group groups with the best sum of their two
// best experts; the weights are the chosen experts' sigmoid scores,
// renormalised when norm_topk_prob, times routed_scaling_factor. The
// multi-token-prediction layers (num_nextn_predict_layers) are not run.
#include "common/model/arch/architecture.h"

namespace dancemoe::arch {
namespace {

Status parse_deepseek_v3(const JsonField& f, ModelConfig* c) {
  DMOE_RETURN_IF_ERROR(read_latent_attention(f, c));
  DMOE_RETURN_IF_ERROR(read_leading_dense_layers(f, c));
  DMOE_RETURN_IF_ERROR(refuse_unless(f, "scoring_func", "sigmoid", "\"sigmoid\""));
  DMOE_RETURN_IF_ERROR(refuse_unless(f, "topk_method", "noaux_tc", "\"noaux_tc\""));
  return read_noaux_router(f, c);
}

}  // namespace

const ArchitectureSpec& deepseek_v3_spec() {
  static const ArchitectureSpec kSpec{"DeepseekV3ForCausalLM", "deepseek_v3", parse_deepseek_v3};
  return kSpec;
}

}  // namespace dancemoe::arch
