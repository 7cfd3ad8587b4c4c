// Helpers of the architecture tests: a small config.json of each family's
// published layout, and parsing / error checks.
#pragma once

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/model/model_config.h"

namespace dancemoe::testing {

inline nlohmann::json llama_fields(const char* arch, const char* model_type) {
  return {{"architectures", {arch}},  {"model_type", model_type}, {"vocab_size", 512},
          {"hidden_size", 64},        {"intermediate_size", 128}, {"num_hidden_layers", 4},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"rope_theta", 10000.0},
          {"rms_norm_eps", 1e-6},     {"hidden_act", "silu"}};
}

inline Result<ModelConfig> parse_config(const nlohmann::json& j) {
  return parse_model_config(j.dump(), "config.json");
}

inline void check_config_error(const nlohmann::json& j, const std::string& fragment) {
  auto r = parse_config(j);
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().message());
  CHECK(r.status().message().find("config.json") != std::string::npos);
  CHECK(r.status().message().find(fragment) != std::string::npos);
}

}  // namespace dancemoe::testing
