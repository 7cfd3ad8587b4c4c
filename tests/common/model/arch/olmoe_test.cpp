#include <doctest/doctest.h>

#include "tests/common/model/arch/arch_test_support.h"

namespace dancemoe {
namespace {

nlohmann::json olmoe_config() {
  nlohmann::json j = testing::llama_fields("OlmoeForCausalLM", "olmoe");
  j["num_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["intermediate_size"] = 32;
  j["clip_qkv"] = nullptr;
  return j;
}

}  // namespace

TEST_CASE("OLMoE: full q/k norm, every layer MoE, no top-k renormalisation by default") {
  auto r = testing::parse_config(olmoe_config());
  REQUIRE(r.is_ok());
  CHECK(r->qk_norm == QkNormKind::kFull);
  CHECK(r->expected_shape(TensorRole::kQNorm) == std::vector<int64_t>{64});
  CHECK(r->expected_shape(TensorRole::kKNorm) == std::vector<int64_t>{32});
  CHECK(r->layer_is_moe == std::vector<bool>(4, true));
  CHECK_FALSE(r->norm_topk_prob);
  CHECK(r->moe_intermediate_size == 32);
  CHECK(r->tensor_name(TensorRole::kExpertGate, 2, 7) ==
        "model.layers.2.mlp.experts.7.gate_proj.weight");
}

TEST_CASE("OLMoE: clip_qkv and other activations are refused naming the field") {
  nlohmann::json j = olmoe_config();
  j["clip_qkv"] = 8.0;
  testing::check_config_error(j, "clip_qkv: expected null");
  j = olmoe_config();
  j["hidden_act"] = "gelu";
  testing::check_config_error(j, "hidden_act: expected \"silu\", got \"gelu\"");
}

}  // namespace dancemoe
