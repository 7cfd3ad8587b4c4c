#include "common/model/model_config.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

namespace dancemoe {
namespace {

nlohmann::json qwen3_config() {
  return {{"architectures", {"Qwen3MoeForCausalLM"}},
          {"model_type", "qwen3_moe"},
          {"vocab_size", 512},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"moe_intermediate_size", 32},
          {"num_hidden_layers", 4},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"head_dim", 16},
          {"num_experts", 8},
          {"num_experts_per_tok", 2},
          {"norm_topk_prob", true},
          {"decoder_sparse_step", 2},
          {"mlp_only_layers", {3}},
          {"rope_theta", 1e6},
          {"rms_norm_eps", 1e-6},
          {"eos_token_id", 7}};
}

Result<ModelConfig> parse(const nlohmann::json& j) {
  return parse_model_config(j.dump(), "config.json");
}

void check_error(const nlohmann::json& j, const std::string& fragment) {
  auto r = parse(j);
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().message());
  CHECK(r.status().message().find("config.json") != std::string::npos);
  CHECK(r.status().message().find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("model config: Qwen3-MoE fields, sparse step and mlp_only_layers") {
  auto r = parse(qwen3_config());
  REQUIRE(r.is_ok());
  CHECK(r->qk_norm == QkNormKind::kPerHead);
  CHECK(r->router_scoring == RouterScoring::kSoftmaxThenTopK);
  CHECK(r->norm_topk_prob);
  // (l + 1) % 2 == 0 -> layers 1 and 3 sparse, but 3 is mlp-only.
  CHECK(r->layer_is_moe == std::vector<bool>{false, true, false, false});
  CHECK(r->eos_token_ids == std::vector<int32_t>{7});
  CHECK(r->tensor_name(TensorRole::kExpertDown, 1, 5) ==
        "model.layers.1.mlp.experts.5.down_proj.weight");
  CHECK(r->expected_shape(TensorRole::kQ) == std::vector<int64_t>{64, 64});
  CHECK(r->expected_shape(TensorRole::kQNorm) == std::vector<int64_t>{16});
}

TEST_CASE("model config: Mixtral naming, router order and defaults") {
  nlohmann::json j = {{"architectures", {"MixtralForCausalLM"}},
                      {"vocab_size", 100},
                      {"hidden_size", 64},
                      {"intermediate_size", 96},
                      {"num_hidden_layers", 2},
                      {"num_attention_heads", 8},
                      {"num_key_value_heads", 2},
                      {"num_local_experts", 4},
                      {"num_experts_per_tok", 2},
                      {"sliding_window", nullptr}};
  auto r = parse(j);
  REQUIRE(r.is_ok());
  CHECK(r->head_dim == 8);
  CHECK(r->rope_theta == 1e6);
  CHECK(r->rms_norm_eps == doctest::Approx(1e-5));
  CHECK(r->router_scoring == RouterScoring::kTopKThenSoftmax);
  CHECK(r->qk_norm == QkNormKind::kNone);
  CHECK(r->tensor_name(TensorRole::kExpertUp, 1, 3) ==
        "model.layers.1.block_sparse_moe.experts.3.w3.weight");
  CHECK(r->tensor_name(TensorRole::kRouter, 0) == "model.layers.0.block_sparse_moe.gate.weight");
}

TEST_CASE("model config: missing, ill-typed and inconsistent fields name the field") {
  nlohmann::json j = qwen3_config();
  j.erase("hidden_size");
  check_error(j, "hidden_size: expected a positive integer, got nothing");
  j = qwen3_config();
  j["num_experts"] = "eight";
  check_error(j, "num_experts: expected a positive integer, got \"eight\"");
  j = qwen3_config();
  j["norm_topk_prob"] = 1;
  check_error(j, "norm_topk_prob: expected true or false");
  j = qwen3_config();
  j["num_experts_per_tok"] = 9;
  check_error(j, "exceeds the number of experts");
  j = qwen3_config();
  j["num_key_value_heads"] = 3;
  check_error(j, "multiple of num_key_value_heads");
  j = qwen3_config();
  j["rope_scaling"] = {{"type", "yarn"}};
  check_error(j, "rope_scaling");
  j = qwen3_config();
  j["eos_token_id"] = 9999;
  check_error(j, "eos_token_id 9999 is outside the vocabulary");
  j = qwen3_config();
  j["architectures"] = {"LlamaForCausalLM"};
  check_error(j,
              "unsupported architecture 'LlamaForCausalLM' (supported: Qwen3MoeForCausalLM, "
              "MixtralForCausalLM, ");
  auto r = parse_model_config("{not json", "config.json");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().message().find("malformed JSON") != std::string::npos);
}

}  // namespace dancemoe

namespace dancemoe {

TEST_CASE(
    "model config: sizes that would allocate beyond memory are refused before any allocation") {
  // Each of these made model-info, the node and the scheduler abort (a
  // vector of layers x experts x 3 tensor names, expert slots, count
  // tables) before the safetensors headers could disagree with them.
  nlohmann::json j = qwen3_config();
  j["num_experts"] = 65535;
  j["num_hidden_layers"] = 65535;
  j.erase("mlp_only_layers");
  check_error(j, "exceeds 1048576 experts in all");
  j = qwen3_config();
  j["num_experts"] = 2147483647;
  check_error(j, "exceeds 65535");
  j = qwen3_config();
  j["vocab_size"] = int64_t{1} << 40;
  check_error(j, "vocab_size (1099511627776) exceeds");
  j = qwen3_config();
  j["moe_intermediate_size"] = int64_t{1} << 40;
  check_error(j, "intermediate size");
}

}  // namespace dancemoe
