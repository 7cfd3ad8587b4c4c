#include <doctest/doctest.h>

#include "tests/common/model/arch/arch_test_support.h"

namespace dancemoe {

TEST_CASE("GLM-4.5: partial rotary, q/k/v biases, q/k norm, shared expert, sigmoid router") {
  nlohmann::json j = testing::llama_fields("Glm4MoeForCausalLM", "glm4_moe");
  j["head_dim"] = 16;
  j["attention_bias"] = true;
  j["use_qk_norm"] = true;
  j["partial_rotary_factor"] = 0.5;
  j["moe_intermediate_size"] = 32;
  j["n_routed_experts"] = 8;
  j["n_shared_experts"] = 1;
  j["num_experts_per_tok"] = 2;
  j["first_k_dense_replace"] = 1;
  j["n_group"] = 1;
  j["topk_group"] = 1;
  j["norm_topk_prob"] = true;
  j["routed_scaling_factor"] = 2.5;
  auto r = testing::parse_config(j);
  REQUIRE(r.is_ok());
  CHECK(r->rope_dim() == 8);
  CHECK(r->rope_layout == RopeLayout::kHalves);
  CHECK(r->attention_bias);
  CHECK_FALSE(r->attention_out_bias);
  CHECK(r->qk_norm == QkNormKind::kPerHead);
  CHECK(r->shared_intermediate_size == 32);
  CHECK(r->router_scoring == RouterScoring::kSigmoid);
  CHECK(r->layer_is_moe == std::vector<bool>{false, true, true, true});
  j["partial_rotary_factor"] = 1.5;
  testing::check_config_error(j, "partial_rotary_factor");
}

}  // namespace dancemoe
