#include <doctest/doctest.h>

#include "tests/common/model/arch/arch_test_support.h"

namespace dancemoe {
namespace {

nlohmann::json qwen2_config() {
  nlohmann::json j = testing::llama_fields("Qwen2MoeForCausalLM", "qwen2_moe");
  j["num_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["moe_intermediate_size"] = 32;
  j["shared_expert_intermediate_size"] = 128;
  j["mlp_only_layers"] = {1};
  return j;
}

}  // namespace

TEST_CASE("Qwen2-MoE: q/k/v biases, a gated shared expert, dense layers by mlp_only_layers") {
  auto r = testing::parse_config(qwen2_config());
  REQUIRE(r.is_ok());
  CHECK(r->attention_bias);
  CHECK(r->shared_intermediate_size == 128);
  CHECK(r->shared_expert_gate);
  CHECK(r->layer_is_moe == std::vector<bool>{true, false, true, true});
  CHECK(r->tensor_name(TensorRole::kSharedUp, 2) ==
        "model.layers.2.mlp.shared_expert.up_proj.weight");
  CHECK(r->tensor_name(TensorRole::kSharedExpertGate, 2) ==
        "model.layers.2.mlp.shared_expert_gate.weight");
  CHECK(r->expected_shape(TensorRole::kSharedExpertGate) == std::vector<int64_t>{1, 64});
  // Shared experts are dense: the routed experts are all the placement sees.
  std::vector<RequiredTensor> tensors = required_tensors(*r);
  int64_t expert_tensors = 0;
  for (const RequiredTensor& t : tensors) expert_tensors += is_expert_role(t.role) ? 1 : 0;
  CHECK(expert_tensors == 3 * 8 * 3);
}

TEST_CASE("Qwen2-MoE: a missing shared expert width and a sliding window are refused") {
  nlohmann::json j = qwen2_config();
  j.erase("shared_expert_intermediate_size");
  testing::check_config_error(j, "shared_expert_intermediate_size");
  j = qwen2_config();
  j["use_sliding_window"] = true;
  testing::check_config_error(j, "use_sliding_window: expected false");
}

}  // namespace dancemoe
