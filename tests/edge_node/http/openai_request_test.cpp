#include "edge_node/http/openai_request.h"

#include <doctest/doctest.h>

namespace dancemoe::node {
namespace {

ApiError error_of(const char* body, OpenAiKind kind = OpenAiKind::kCompletion) {
  std::variant<OpenAiRequest, ApiError> r = parse_openai_request(body, kind);
  REQUIRE(std::holds_alternative<ApiError>(r));
  const ApiError e = std::get<ApiError>(r);
  CHECK(e.http_status == 400);
  CHECK(e.type == "invalid_request_error");
  return e;
}

OpenAiRequest ok_of(const char* body, OpenAiKind kind = OpenAiKind::kCompletion) {
  std::variant<OpenAiRequest, ApiError> r = parse_openai_request(body, kind);
  if (const ApiError* e = std::get_if<ApiError>(&r)) FAIL("unexpected error: " << e->message);
  return std::get<OpenAiRequest>(r);
}

}  // namespace

TEST_CASE("openai request: completion fields are read, with OpenAI's defaults") {
  OpenAiRequest r = ok_of(
      R"({"model": "small", "prompt": "Hello", "max_tokens": 7, "temperature": 0.5,
          "top_p": 0.9, "top_k": 5, "seed": 42, "stop": ["\n", "END"], "n": 1,
          "stream": true, "stream_options": {"include_usage": true}, "user": "u1",
          "presence_penalty": 0, "logprobs": null, "ignore_eos": true})");
  CHECK(r.model == "small");
  CHECK(r.prompt == "Hello");
  CHECK(r.max_tokens == 7);
  CHECK(r.sampling.temperature == doctest::Approx(0.5));
  CHECK(r.sampling.top_p == doctest::Approx(0.9));
  CHECK(r.sampling.top_k == 5);
  CHECK(r.sampling.seed == 42);
  CHECK(r.stop == std::vector<std::string>{"\n", "END"});
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK(r.ignore_eos);

  OpenAiRequest d = ok_of(R"({"prompt": ["one prompt"], "max_tokens": null, "stop": "x"})");
  CHECK(d.prompt == "one prompt");
  CHECK_FALSE(d.max_tokens.has_value());  // the route picks 16 (completions)
  CHECK(d.sampling.temperature == doctest::Approx(1.0));
  CHECK(d.stop == std::vector<std::string>{"x"});
  CHECK_FALSE(d.stream);
}

TEST_CASE("openai request: chat messages with text parts and the developer role") {
  OpenAiRequest r = ok_of(
      R"({"messages": [{"role": "developer", "content": "be brief"},
                       {"role": "user", "content": [{"type": "text", "text": "Hi "},
                                                    {"type": "text", "text": "there"}]},
                       {"role": "assistant", "content": "Hello", "name": "bot"}],
          "max_completion_tokens": 3})",
      OpenAiKind::kChat);
  REQUIRE(r.messages.size() == 3);
  CHECK(r.messages[0].role == "system");
  CHECK(r.messages[1].content == "Hi there");
  CHECK(r.messages[2].role == "assistant");
  CHECK(r.max_tokens == 3);
}

TEST_CASE("openai request: malformed JSON is refused") {
  const ApiError e = error_of("{\"prompt\": ");
  CHECK(e.code == "invalid_json");
  CHECK(error_of("[1, 2]").message.find("a JSON object") != std::string::npos);
}

TEST_CASE("openai request: wrong types name the field") {
  CHECK(error_of(R"({"prompt": 5})").param == "prompt");
  CHECK(error_of(R"({"prompt": "x", "max_tokens": "ten"})").param == "max_tokens");
  CHECK(error_of(R"({"prompt": "x", "temperature": "hot"})").param == "temperature");
  CHECK(error_of(R"({"prompt": "x", "stream": "yes"})").param == "stream");
  CHECK(error_of(R"({"prompt": "x", "stop": [1]})").param == "stop");
  CHECK(error_of(R"({"prompt": "x", "model": 3})").param == "model");
  CHECK(error_of(R"({"prompt": "x", "seed": 1.5})").param == "seed");
  CHECK(error_of(R"({"messages": "hi"})", OpenAiKind::kChat).param == "messages");
  CHECK(error_of(R"({"messages": [{"role": "user", "content": 5}]})", OpenAiKind::kChat).param ==
        "messages[0].content");
  CHECK(error_of(R"({"messages": [{"content": "x"}]})", OpenAiKind::kChat).param ==
        "messages[0].role");
}

TEST_CASE("openai request: absurd values name the field") {
  CHECK(error_of(R"({"prompt": "x", "max_tokens": -5})").param == "max_tokens");
  CHECK(error_of(R"({"prompt": "x", "max_tokens": 0})").param == "max_tokens");
  CHECK(error_of(R"({"prompt": "x", "temperature": -0.1})").param == "temperature");
  CHECK(error_of(R"({"prompt": "x", "temperature": 2.5})").param == "temperature");
  CHECK(error_of(R"({"prompt": "x", "top_p": 0})").param == "top_p");
  CHECK(error_of(R"({"prompt": "x", "top_p": 1.01})").param == "top_p");
  CHECK(error_of(R"({"prompt": "x", "top_k": -1})").param == "top_k");
  // A negative seed wrapped to 2^64 - 1 (and so ran unseeded-looking).
  CHECK(error_of(R"({"prompt": "x", "seed": -1})").param == "seed");
  CHECK(error_of(R"({"prompt": "x", "n": 2})").param == "n");
  CHECK(error_of(R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})").param == "stop");
  CHECK(error_of(R"({"prompt": "x", "stop": ""})").param == "stop");
  CHECK(error_of(R"({"prompt": "x", "frequency_penalty": 0.5})").param == "frequency_penalty");
  CHECK(error_of(R"({"prompt": "x", "echo": true})").param == "echo");
  CHECK(error_of(R"({"messages": []})", OpenAiKind::kChat).param == "messages");
  CHECK(error_of(R"({"messages": [{"role": "tool", "content": "x"}]})", OpenAiKind::kChat).param ==
        "messages[0].role");
}

TEST_CASE("openai request: missing and unknown fields are refused") {
  CHECK(error_of(R"({"model": "m"})").param == "prompt");
  CHECK(error_of(R"({"model": "m"})", OpenAiKind::kChat).param == "messages");
  const ApiError typo = error_of(R"({"prompt": "x", "temprature": 1})");
  CHECK(typo.param == "temprature");
  CHECK(typo.code == "unknown_parameter");
  // Each endpoint's own input only.
  CHECK(error_of(R"({"prompt": "x"})", OpenAiKind::kChat).param == "prompt");
  CHECK(error_of(R"({"prompt": "x", "messages": []})").param == "messages");
}

}  // namespace dancemoe::node
