#include <doctest/doctest.h>

#include "tests/common/model/arch/arch_test_support.h"

namespace dancemoe {
namespace {

// openai/gpt-oss-20b's config.json at a small size.
nlohmann::json gpt_oss_config() {
  nlohmann::json j = testing::llama_fields("GptOssForCausalLM", "gpt_oss");
  j.erase("rms_norm_eps");
  j.erase("rope_theta");
  j["head_dim"] = 16;
  j["attention_bias"] = true;
  j["num_local_experts"] = 8;
  j["num_experts_per_tok"] = 2;
  j["experts_per_token"] = 2;
  j["intermediate_size"] = 64;
  j["sliding_window"] = 128;
  j["swiglu_limit"] = 7.0;
  j["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention", "full_attention"};
  j["rope_scaling"] = {{"beta_fast", 32.0},   {"beta_slow", 1.0},
                       {"factor", 32.0},      {"original_max_position_embeddings", 4096},
                       {"rope_type", "yarn"}, {"truncate", false}};
  j["quantization_config"] = {{"quant_method", "mxfp4"}};
  return j;
}

}  // namespace

TEST_CASE("gpt-oss: sinks, biases, alternating sliding layers, clamped SwiGLU experts") {
  auto r = testing::parse_config(gpt_oss_config());
  REQUIRE(r.is_ok());
  CHECK(r->attention_sinks);
  CHECK(r->attention_bias);
  CHECK(r->attention_out_bias);
  CHECK(r->sliding_window == 128);
  CHECK(r->is_sliding(0));
  CHECK_FALSE(r->is_sliding(1));
  CHECK(r->is_sliding(2));
  CHECK(r->router_scoring == RouterScoring::kTopKThenSoftmax);
  CHECK(r->router_bias);
  CHECK(r->expert_bias);
  CHECK(r->expert_activation == ExpertActivation::kClampedSwiGLU);
  CHECK(r->swiglu_alpha == doctest::Approx(1.702));
  CHECK(r->swiglu_limit == doctest::Approx(7.0));
  CHECK(r->rms_norm_eps == doctest::Approx(1e-5));
  CHECK(r->rope_theta == doctest::Approx(150000.0));
  CHECK(r->rope_scaling.type == RopeScaling::Type::kYarn);
  CHECK_FALSE(r->rope_scaling.truncate);
  CHECK(r->layer_is_moe == std::vector<bool>{true, true, true, true});
  REQUIRE(r->stacked_experts.has_value());
  CHECK(tensor_name_from_pattern(r->stacked_experts->gate_up_blocks, 3) ==
        "model.layers.3.mlp.experts.gate_up_proj_blocks");
  CHECK(r->tensor_name(TensorRole::kExpertUp, 2, 5) ==
        "model.layers.2.mlp.experts.gate_up_proj[5, 1::2]");
  CHECK(r->tensor_name(TensorRole::kRouterBias, 1) == "model.layers.1.mlp.router.bias");
  CHECK(r->tensor_name(TensorRole::kSinks, 1) == "model.layers.1.self_attn.sinks");
  CHECK(r->expected_shape(TensorRole::kQ) == std::vector<int64_t>{64, 64});
  CHECK(r->expected_shape(TensorRole::kExpertDownBias) == std::vector<int64_t>{64});
}

TEST_CASE("gpt-oss: without layer_types, even layers slide as GptOssConfig fills them") {
  nlohmann::json j = gpt_oss_config();
  j.erase("layer_types");
  auto r = testing::parse_config(j);
  REQUIRE(r.is_ok());
  CHECK(r->layer_sliding == std::vector<bool>{true, false, true, false});
}

TEST_CASE("gpt-oss: configs it cannot compute are refused naming the field") {
  nlohmann::json j = gpt_oss_config();
  j.erase("quantization_config");
  testing::check_config_error(j, "quantization_config");
  j = gpt_oss_config();
  j["quantization_config"]["quant_method"] = "bitsandbytes";
  testing::check_config_error(j, "quant_method");
  j = gpt_oss_config();
  j["layer_types"][1] = "chunked_attention";
  testing::check_config_error(j, "layer_types[1]");
  j = gpt_oss_config();
  j["layer_types"] = {"full_attention"};
  testing::check_config_error(j, "layer_types");
  j = gpt_oss_config();
  j["intermediate_size"] = 48;
  testing::check_config_error(j, "multiples of 32");
}

}  // namespace dancemoe
