#include <doctest/doctest.h>

#include "tests/common/model/arch/arch_test_support.h"

namespace dancemoe {

TEST_CASE("DeepSeek-V3: the sigmoid noaux_tc router with groups and scaling") {
  nlohmann::json j = testing::llama_fields("DeepseekV3ForCausalLM", "deepseek_v3");
  j["num_key_value_heads"] = 4;
  j["moe_intermediate_size"] = 32;
  j["n_routed_experts"] = 8;
  j["n_shared_experts"] = 1;
  j["num_experts_per_tok"] = 2;
  j["first_k_dense_replace"] = 1;
  j["q_lora_rank"] = 48;
  j["kv_lora_rank"] = 32;
  j["qk_nope_head_dim"] = 16;
  j["qk_rope_head_dim"] = 8;
  j["v_head_dim"] = 16;
  j["topk_method"] = "noaux_tc";
  j["scoring_func"] = "sigmoid";
  j["n_group"] = 4;
  j["topk_group"] = 2;
  j["norm_topk_prob"] = true;
  j["routed_scaling_factor"] = 2.5;
  auto r = testing::parse_config(j);
  REQUIRE(r.is_ok());
  CHECK(r->router_scoring == RouterScoring::kSigmoid);
  CHECK(r->router_choice_bias);
  CHECK(r->group_score == GroupScore::kTop2Sum);
  CHECK(r->routed_scaling_factor == 2.5);
  CHECK(r->norm_topk_prob);
  CHECK(r->tensor_name(TensorRole::kRouterChoiceBias, 2) ==
        "model.layers.2.mlp.gate.e_score_correction_bias");
  CHECK(r->attention_scale_multiplier == 1.0);  // no rope_scaling
  j["scoring_func"] = "softmax";
  testing::check_config_error(j, "scoring_func: expected \"sigmoid\"");
}

}  // namespace dancemoe
