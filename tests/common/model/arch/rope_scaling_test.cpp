#include <doctest/doctest.h>

#include "tests/common/model/arch/arch_test_support.h"

namespace dancemoe {
namespace {

nlohmann::json mixtral_with(nlohmann::json rope_scaling) {
  nlohmann::json j = testing::llama_fields("MixtralForCausalLM", "mixtral");
  j["num_local_experts"] = 4;
  j["num_experts_per_tok"] = 2;
  j["max_position_embeddings"] = 32768;
  j["rope_scaling"] = std::move(rope_scaling);
  return j;
}

}  // namespace

TEST_CASE("rope scaling: linear, yarn and llama3 are read with their keys and defaults") {
  auto r = testing::parse_config(mixtral_with({{"rope_type", "linear"}, {"factor", 2.0}}));
  REQUIRE(r.is_ok());
  CHECK(r->rope_scaling.type == RopeScaling::Type::kLinear);
  CHECK(r->rope_scaling.factor == 2.0);

  // Older configs spell the type "type"; YaRN's original length defaults
  // to max_position_embeddings.
  r = testing::parse_config(
      mixtral_with({{"type", "yarn"}, {"factor", 4.0}, {"mscale", 0.707}, {"truncate", false}}));
  REQUIRE(r.is_ok());
  CHECK(r->rope_scaling.type == RopeScaling::Type::kYarn);
  CHECK(r->rope_scaling.beta_fast == 32.0);
  CHECK(r->rope_scaling.beta_slow == 1.0);
  CHECK(r->rope_scaling.mscale == doctest::Approx(0.707));
  CHECK_FALSE(r->rope_scaling.truncate);
  CHECK(r->rope_scaling.original_max_position_embeddings == 32768);

  r = testing::parse_config(mixtral_with({{"rope_type", "llama3"},
                                          {"factor", 8.0},
                                          {"low_freq_factor", 1.0},
                                          {"high_freq_factor", 4.0},
                                          {"original_max_position_embeddings", 8192}}));
  REQUIRE(r.is_ok());
  CHECK(r->rope_scaling.type == RopeScaling::Type::kLlama3);
  CHECK(r->rope_scaling.original_max_position_embeddings == 8192);

  r = testing::parse_config(mixtral_with({{"rope_type", "default"}}));
  REQUIRE(r.is_ok());
  CHECK(r->rope_scaling.type == RopeScaling::Type::kNone);
}

TEST_CASE("rope scaling: an unknown type or key is refused naming it and what is supported") {
  testing::check_config_error(mixtral_with({{"rope_type", "dynamic"}, {"factor", 2.0}}),
                              "rope_scaling.rope_type: unsupported value \"dynamic\" (supported: "
                              "default, linear, yarn, llama3)");
  testing::check_config_error(mixtral_with({{"type", "longrope"}}),
                              "rope_scaling.type: unsupported value \"longrope\"");
  testing::check_config_error(
      mixtral_with({{"rope_type", "linear"}, {"factor", 2.0}, {"beta_fast", 32}}),
      "key \"beta_fast\" is not defined for rope type \"linear\"");
  testing::check_config_error(mixtral_with({{"rope_type", "yarn"}}), "rope_scaling.factor");
  testing::check_config_error(mixtral_with({{"rope_type", "llama3"},
                                            {"factor", 8.0},
                                            {"low_freq_factor", 4.0},
                                            {"high_freq_factor", 1.0},
                                            {"original_max_position_embeddings", 8192}}),
                              "high_freq_factor");
  testing::check_config_error(mixtral_with("yarn"), "rope_scaling");
}

TEST_CASE("sliding window: Mixtral's applies to every layer, null to none") {
  nlohmann::json j = mixtral_with(nullptr);
  j["sliding_window"] = 4096;
  auto r = testing::parse_config(j);
  REQUIRE(r.is_ok());
  CHECK(r->sliding_window == 4096);
  CHECK(r->is_sliding(0));
  CHECK(r->is_sliding(3));
  j["sliding_window"] = nullptr;
  r = testing::parse_config(j);
  REQUIRE(r.is_ok());
  CHECK_FALSE(r->is_sliding(0));
  j["sliding_window"] = -3;
  testing::check_config_error(j, "sliding_window");
}

}  // namespace dancemoe
