#include <doctest/doctest.h>

#include "tests/common/model/arch/arch_test_support.h"

namespace dancemoe {
namespace {

// DeepSeek-V2-Lite's layout at a small size.
nlohmann::json v2_lite_config() {
  nlohmann::json j = testing::llama_fields("DeepseekV2ForCausalLM", "deepseek_v2");
  j["num_key_value_heads"] = 4;
  j["moe_intermediate_size"] = 32;
  j["n_routed_experts"] = 8;
  j["n_shared_experts"] = 2;
  j["num_experts_per_tok"] = 2;
  j["first_k_dense_replace"] = 1;
  j["moe_layer_freq"] = 1;
  j["q_lora_rank"] = nullptr;
  j["kv_lora_rank"] = 32;
  j["qk_nope_head_dim"] = 16;
  j["qk_rope_head_dim"] = 8;
  j["v_head_dim"] = 16;
  j["topk_method"] = "greedy";
  j["scoring_func"] = "softmax";
  j["norm_topk_prob"] = false;
  j["routed_scaling_factor"] = 1.0;
  j["rope_scaling"] = {{"type", "yarn"},
                       {"factor", 40},
                       {"mscale", 0.707},
                       {"mscale_all_dim", 0.707},
                       {"beta_fast", 32},
                       {"beta_slow", 1},
                       {"original_max_position_embeddings", 4096}};
  return j;
}

}  // namespace

TEST_CASE("DeepSeek-V2-Lite: latent attention, shared experts, a leading dense layer") {
  auto r = testing::parse_config(v2_lite_config());
  REQUIRE(r.is_ok());
  CHECK(r->attention == AttentionKind::kLatent);
  CHECK(r->q_lora_rank == 0);
  CHECK(r->head_dim == 24);
  CHECK(r->rope_dim() == 8);
  CHECK(r->rope_layout == RopeLayout::kPairs);
  CHECK(r->cache_key_dim() == 32 + 8);
  CHECK(r->cache_value_dim() == 0);
  CHECK(r->attention_out_dim() == 4 * 16);
  CHECK(r->layer_is_moe == std::vector<bool>{false, true, true, true});
  CHECK(r->shared_intermediate_size == 64);
  CHECK(r->n_group == 1);
  // softmax scale x mscale(40, 0.707)^2
  const double m = 0.1 * 0.707 * std::log(40.0) + 1.0;
  CHECK(r->attention_scale_multiplier == doctest::Approx(m * m));
  CHECK(r->expected_shape(TensorRole::kKvA) == std::vector<int64_t>{40, 64});
  CHECK(r->expected_shape(TensorRole::kKvB) == std::vector<int64_t>{4 * 32, 32});
  CHECK(r->expected_shape(TensorRole::kQ) == std::vector<int64_t>{4 * 24, 64});
  CHECK(r->tensor_name(TensorRole::kSharedDown, 3) ==
        "model.layers.3.mlp.shared_experts.down_proj.weight");
}

TEST_CASE("DeepSeek-V2: q_lora_rank and group-limited greedy routing") {
  nlohmann::json j = v2_lite_config();
  j["q_lora_rank"] = 24;
  j["topk_method"] = "group_limited_greedy";
  j["n_group"] = 4;
  j["topk_group"] = 2;
  j["routed_scaling_factor"] = 16.0;
  auto r = testing::parse_config(j);
  REQUIRE(r.is_ok());
  CHECK(r->q_lora_rank == 24);
  CHECK(r->expected_shape(TensorRole::kQB) == std::vector<int64_t>{4 * 24, 24});
  CHECK(r->n_group == 4);
  CHECK(r->group_score == GroupScore::kMax);
  CHECK(r->routed_scaling_factor == 16.0);  // scaled, since the weights are not renormalised
  j["norm_topk_prob"] = true;
  r = testing::parse_config(j);
  REQUIRE(r.is_ok());
  CHECK(r->routed_scaling_factor == 1.0);  // renormalised instead (DeepSeek's code: one or other)
}

TEST_CASE("DeepSeek-V2: unknown routing methods and impossible groups are refused") {
  nlohmann::json j = v2_lite_config();
  j["topk_method"] = "noaux_tc";
  testing::check_config_error(j,
                              "topk_method: unsupported value \"noaux_tc\" (supported: "
                              "greedy, group_limited_greedy)");
  j = v2_lite_config();
  j["scoring_func"] = "sigmoid";
  testing::check_config_error(j, "scoring_func: expected \"softmax\"");
  j = v2_lite_config();
  j["topk_method"] = "group_limited_greedy";
  j["n_group"] = 3;
  j["topk_group"] = 1;
  testing::check_config_error(j, "n_group (3) must divide the experts (8)");
  j = v2_lite_config();
  j.erase("kv_lora_rank");
  testing::check_config_error(j, "kv_lora_rank");
}

}  // namespace dancemoe
