#include "edge_node/http/generate_json.h"

#include <doctest/doctest.h>

namespace dancemoe::node {

TEST_CASE("generate request: fields are read with their defaults") {
  Result<GenerateRequest> r = parse_generate_request(
      R"({"prompt": "hi", "max_tokens": 8, "temperature": 0.5, "top_k": 4, "top_p": 0.9,
          "seed": 3, "stop": "\n", "ignore_eos": true, "return_logits": true})");
  REQUIRE(r.is_ok());
  CHECK(r->prompt == "hi");
  CHECK(r->max_tokens == 8);
  CHECK(r->sampling.temperature == doctest::Approx(0.5));
  CHECK(r->sampling.top_k == 4);
  CHECK(r->sampling.seed == 3);
  CHECK(r->stop == std::vector<std::string>{"\n"});
  CHECK(r->ignore_eos);
  CHECK(r->return_logits);
  Result<GenerateRequest> ids = parse_generate_request(R"({"prompt_tokens": [1, 2, 3]})");
  REQUIRE(ids.is_ok());
  CHECK(ids->prompt_tokens == std::vector<int32_t>{1, 2, 3});
  CHECK(ids->max_tokens == 64);
  CHECK(ids->sampling.temperature == 0);
}

TEST_CASE("generate request: malformed bodies are invalid_argument naming the field") {
  auto message = [](const char* body) {
    Result<GenerateRequest> r = parse_generate_request(body);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    return r.status().message();
  };
  CHECK(message("{oops") == "request body is not valid JSON");
  CHECK(message(R"({"prompt": 5})") == "prompt: expected a string, got 5");
  CHECK(message(R"({"prompt": "x", "max_tokens": 0})").find("max_tokens") == 0);
  CHECK(message(R"({"prompt_tokens": [1, -2]})").find("prompt_tokens") == 0);
  CHECK(message(R"({"prompt": "x", "temperature": "hot"})").find("temperature") == 0);
  CHECK(message(R"({"prompt": "x", "temprature": 1})").find("unknown field 'temprature'") == 0);
  CHECK(message(R"({"max_tokens": 3})").find("exactly one of") != std::string::npos);
  CHECK(message(R"({"prompt": "x", "prompt_tokens": [1]})").find("exactly one of") !=
        std::string::npos);
  CHECK(message(R"({"prompt": "x", "top_p": 0})").find("top_p") != std::string::npos);
}

TEST_CASE("generate response: counts and optional logits") {
  GenerateResponse r;
  r.tokens = {5, 6, 7};
  r.decode_ms = 20;
  r.served.activations = 10;
  r.served.local = 4;
  r.served.remote = 6;
  nlohmann::json j = generate_response_json(r);
  CHECK(j["activations"]["local"] == 4);
  CHECK(j["decode_tokens_per_s"].get<double>() == doctest::Approx(100.0));
  CHECK_FALSE(j.contains("logits"));
  r.logits = {{0.5f, 1.5f}};
  CHECK(generate_response_json(r)["logits"][0][1].get<float>() == 1.5f);
}

}  // namespace dancemoe::node
