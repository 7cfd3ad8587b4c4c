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
  REQUIRE(r.prompts.size() == 1);
  CHECK(r.prompts[0].text == "Hello");
  CHECK(r.max_tokens == 7);
  CHECK(r.sampling.temperature == doctest::Approx(0.5));
  CHECK(r.sampling.top_p == doctest::Approx(0.9));
  CHECK(r.sampling.top_k == 5);
  CHECK(r.sampling.seed == 42);
  CHECK(r.seed_given);
  CHECK(r.stop == std::vector<std::string>{"\n", "END"});
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK(r.ignore_eos);

  OpenAiRequest d = ok_of(R"({"prompt": ["one prompt"], "max_tokens": null, "stop": "x"})");
  REQUIRE(d.prompts.size() == 1);
  CHECK(d.prompts[0].text == "one prompt");
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
  CHECK(r.messages[0]["role"] == "system");
  CHECK(r.messages[1]["content"][1]["text"] == "there");  // as sent: the template joins parts
  CHECK(r.messages[2]["role"] == "assistant");
  CHECK(r.messages[2]["name"] == "bot");
  CHECK(r.max_tokens == 3);
}

TEST_CASE("openai request: a tool-calling conversation is kept as sent, keys in order") {
  const OpenAiRequest r = ok_of(
      R"({"messages": [{"role": "user", "content": "Weather in Paris?"},
                       {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                        "type": "function", "function": {"name": "get_weather",
                        "arguments": "{\"city\": \"Paris\"}"}}]},
                       {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
          "tools": [{"type": "function", "function": {"name": "get_weather", "parameters":
                    {"type": "object", "properties": {"zeta": {}, "alpha": {}}}}}],
          "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
          "parallel_tool_calls": true, "chat_template_kwargs": {"enable_thinking": false}})",
      OpenAiKind::kChat);
  REQUIRE(r.messages.size() == 3);
  CHECK(r.messages[1]["tool_calls"][0]["function"]["name"] == "get_weather");
  CHECK(r.messages[2]["tool_call_id"] == "call_1");
  CHECK(r.tools.choice == ToolChoiceMode::kFunction);
  CHECK(r.tools.function == "get_weather");
  CHECK(r.tools.tools[0]["function"]["parameters"]["properties"].begin().key() == "zeta");
  CHECK(r.chat_template_kwargs == nlohmann::ordered_json{{"enable_thinking", false}});
  CHECK(r.ignored.empty());
}

TEST_CASE("openai request: bad tool messages, tools and template kwargs name the field") {
  const auto chat = [](const char* body) { return error_of(body, OpenAiKind::kChat); };
  const ApiError no_id = chat(R"({"messages": [{"role": "tool", "content": "sunny"}]})");
  CHECK(no_id.param == "messages[0].tool_call_id");
  CHECK(no_id.code == "missing_required");
  CHECK(chat(R"({"messages": [{"role": "tool", "tool_call_id": 5, "content": "x"}]})").param ==
        "messages[0].tool_call_id");
  CHECK(chat(R"({"messages": [{"role": "user", "content": "x", "tool_call_id": "a"}]})").param ==
        "messages[0].tool_call_id");
  CHECK(chat(R"({"messages": [{"role": "assistant", "content": null}]})").param ==
        "messages[0].content");
  CHECK(chat(R"({"messages": [{"role": "assistant", "tool_calls": {}}]})").param ==
        "messages[0].tool_calls");
  CHECK(chat(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "a",
                 "function": {"arguments": "{}"}}]}]})")
            .param == "messages[0].tool_calls[0].function.name");
  CHECK(chat(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "type": "web",
                 "function": {"name": "f"}}]}]})")
            .param == "messages[0].tool_calls[0].type");
  CHECK(chat(R"({"messages": [{"role": "user", "content": "x"}],
                 "tools": [{"type": "function", "function": {"name": "f"}}],
                 "tool_choice": {"type": "function", "function": {"name": "g"}}})")
            .param == "tool_choice");
  CHECK(chat(R"({"messages": [{"role": "user", "content": "x"}], "tools": "all"})").param ==
        "tools");
  CHECK(
      chat(R"({"messages": [{"role": "user", "content": "x"}], "parallel_tool_calls": 1})").param ==
      "parallel_tool_calls");
  CHECK(chat(R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": [1]})")
            .param == "chat_template_kwargs");
  CHECK(chat(R"({"messages": [{"role": "user", "content": "x"}],
                 "chat_template_kwargs": {"messages": []}})")
            .param == "chat_template_kwargs.messages");
}

TEST_CASE("openai request: reasoning_effort becomes the chat template's variable") {
  const OpenAiRequest r =
      ok_of(R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "high"})",
            OpenAiKind::kChat);
  CHECK(r.chat_template_kwargs == nlohmann::ordered_json{{"reasoning_effort", "high"}});
  CHECK(r.ignored.empty());
  // An explicit template variable wins.
  const OpenAiRequest k =
      ok_of(R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "high",
                "chat_template_kwargs": {"reasoning_effort": "low"}})",
            OpenAiKind::kChat);
  CHECK(k.chat_template_kwargs["reasoning_effort"] == "low");
  const ApiError bad =
      error_of(R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "max"})",
               OpenAiKind::kChat);
  CHECK(bad.param == "reasoning_effort");
  CHECK(bad.message.find("\"low\"") != std::string::npos);
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
  CHECK(error_of(R"({"prompt": "x", "top_k": -2})").param == "top_k");  // -1 is vLLM's "off"
  // A negative seed wrapped to 2^64 - 1 (and so ran unseeded-looking).
  CHECK(error_of(R"({"prompt": "x", "seed": -1})").param == "seed");
  CHECK(error_of(R"({"prompt": "x", "n": 17})").param == "n");
  CHECK(error_of(R"({"prompt": "x", "n": 0})").param == "n");
  CHECK(error_of(R"({"prompt": ["a", "b", "c"], "n": 6})").param == "prompt");  // 18 choices
  CHECK(error_of(R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})").param == "stop");
  CHECK(error_of(R"({"prompt": "x", "stop": ""})").param == "stop");
  CHECK(error_of(R"({"prompt": "x", "frequency_penalty": 2.5})").param == "frequency_penalty");
  CHECK(error_of(R"({"prompt": "x", "presence_penalty": -3})").param == "presence_penalty");
  CHECK(error_of(R"({"prompt": "x", "repetition_penalty": 0})").param == "repetition_penalty");
  CHECK(error_of(R"({"prompt": "x", "min_p": 1.5})").param == "min_p");
  CHECK(error_of(R"({"prompt": "x", "echo": true, "logprobs": 1})").param == "echo");
  CHECK(error_of(R"({"prompt": "x", "logprobs": 21})").param == "logprobs");
  CHECK(error_of(R"({"prompt": "x", "logprobs": "yes"})").param == "logprobs");
  CHECK(error_of(R"({"prompt": "x", "best_of": 1, "n": 2})").param == "best_of");
  CHECK(error_of(R"({"prompt": "x", "logit_bias": {"abc": 1}})").param == "logit_bias");
  CHECK(error_of(R"({"prompt": "x", "logit_bias": {"5": 101}})").param == "logit_bias.5");
  CHECK(error_of(R"({"prompt": "x", "logit_bias": [1]})").param == "logit_bias");
  CHECK(error_of(R"({"prompt": [1, -2]})").param == "prompt");
  CHECK(error_of(R"({"prompt": []})").param == "prompt");
  CHECK(error_of(R"({"prompt": [[1], "x", 3]})").param == "prompt");
  CHECK(error_of(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 3})",
                 OpenAiKind::kChat)
            .param == "logprobs");
  CHECK(error_of(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 3})",
                 OpenAiKind::kChat)
            .param == "top_logprobs");
  CHECK(error_of(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true,
                     "top_logprobs": 21})",
                 OpenAiKind::kChat)
            .param == "top_logprobs");
  CHECK(error_of(R"({"messages": []})", OpenAiKind::kChat).param == "messages");
  CHECK(error_of(R"({"messages": [{"role": "function", "content": "x"}]})", OpenAiKind::kChat)
            .param == "messages[0].role");
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

TEST_CASE("openai request: the compatibility fields are read") {
  OpenAiRequest r = ok_of(
      R"({"prompt": ["a", "b"], "n": 3, "presence_penalty": -0.5, "frequency_penalty": 1.5,
          "repetition_penalty": 1.2, "min_p": 0.05, "top_k": -1, "logprobs": 4,
          "logit_bias": {"17": -100, "3": 2.5}, "max_completion_tokens": 9, "max_tokens": 5,
          "seed": 3})");
  REQUIRE(r.prompts.size() == 2);
  CHECK(r.prompts[1].text == "b");
  CHECK(r.n == 3);
  CHECK(r.sampling.presence_penalty == doctest::Approx(-0.5));
  CHECK(r.sampling.frequency_penalty == doctest::Approx(1.5));
  CHECK(r.sampling.repetition_penalty == doctest::Approx(1.2));
  CHECK(r.sampling.min_p == doctest::Approx(0.05));
  CHECK(r.sampling.top_k == 0);  // vLLM's -1: off
  CHECK(r.n_logprobs == 4);
  CHECK(ok_of(R"({"prompt": "x", "echo": true})").echo);
  CHECK(r.max_tokens == 9);  // max_completion_tokens wins
  REQUIRE(r.sampling.logit_bias.size() == 2);
  CHECK(r.sampling.logit_bias[0] == std::pair<int32_t, float>{17, -100.0f});

  OpenAiRequest ids = ok_of(R"({"prompt": [[1, 2], [3]]})");
  REQUIRE(ids.prompts.size() == 2);
  CHECK(ids.prompts[0].tokens == std::vector<int32_t>{1, 2});
  CHECK(ok_of(R"({"prompt": [5, 6, 7]})").prompts[0].tokens == std::vector<int32_t>{5, 6, 7});

  OpenAiRequest chat = ok_of(R"({"messages": [{"role": "user", "content": "x"}],
                                 "logprobs": true, "top_logprobs": 2, "repeat_penalty": 1.1})",
                             OpenAiKind::kChat);
  CHECK(chat.n_logprobs == 2);
  CHECK(chat.sampling.repetition_penalty == doctest::Approx(1.1));
  CHECK(ok_of(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": false})",
              OpenAiKind::kChat)
            .n_logprobs == -1);
}

TEST_CASE("openai request: without a seed every request gets a fresh one") {
  const OpenAiRequest a = ok_of(R"({"prompt": "x"})");
  const OpenAiRequest b = ok_of(R"({"prompt": "x"})");
  CHECK_FALSE(a.seed_given);
  CHECK(a.sampling.seed != b.sampling.seed);
  CHECK(ok_of(R"({"prompt": "x", "seed": 0})").sampling.seed == 0);
}

TEST_CASE(
    "openai request: fields of other servers are ignored by name, output-changing ones refused") {
  const OpenAiRequest r = ok_of(
      R"({"prompt": "x", "metadata": {"a": 1}, "store": true, "mirostat": 2, "cache_prompt": true,
          "suffix": "y", "best_of": 3})");
  CHECK(r.ignored == std::vector<std::string>{"best_of", "cache_prompt", "metadata", "mirostat",
                                              "store", "suffix"});
  const OpenAiRequest chat =
      ok_of(R"({"messages": [{"role": "user", "content": "x"}], "tools": [], "tool_choice": "auto",
                "verbosity": "low", "parallel_tool_calls": false})",
            OpenAiKind::kChat);
  CHECK(chat.ignored == std::vector<std::string>{"verbosity"});  // tools are read
  const OpenAiRequest completion =
      ok_of(R"({"prompt": "x", "tools": [], "tool_choice": "auto", "parallel_tool_calls": true})");
  CHECK(completion.ignored.size() == 3);
  const ApiError regex = error_of(R"({"prompt": "x", "guided_regex": "a+"})");
  CHECK(regex.param == "guided_regex");
  CHECK(regex.code == "unsupported_parameter");
  CHECK(error_of(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})",
                 OpenAiKind::kChat)
            .message.find("needs tools") != std::string::npos);
  // A chat-only field on completions is still unknown.
  CHECK(error_of(R"({"prompt": "x", "reasoning_effort": "low"})").code == "unknown_parameter");
}

TEST_CASE("openai request: response_format builds a grammar or names the schema's problem") {
  CHECK(ok_of(R"({"prompt": "x", "response_format": {"type": "text"}})").grammar == nullptr);
  CHECK(ok_of(R"({"prompt": "x", "response_format": {"type": "json_object"}})").grammar != nullptr);
  CHECK(ok_of(R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema":
                  {"name": "p", "strict": true, "schema": {"type": "object", "properties":
                  {"a": {"type": "integer"}}, "required": ["a"]}}}})")
            .grammar != nullptr);
  CHECK(ok_of(R"({"prompt": "x", "guided_json": "{\"type\": \"integer\"}"})").grammar != nullptr);
  CHECK(ok_of(R"({"prompt": "x", "json_schema": {"type": "boolean"}})").grammar != nullptr);
  const ApiError pattern = error_of(
      R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "p",
          "schema": {"properties": {"zip": {"type": "string", "pattern": "[0-9]+"}}}}}})");
  CHECK(pattern.param == "response_format");
  CHECK(pattern.code == "unsupported_schema");
  CHECK(pattern.message ==
        "response_format.json_schema.schema.properties.zip.pattern: 'pattern' is not supported");
  CHECK(error_of(R"({"prompt": "x", "response_format": {"type": "yaml"}})").param ==
        "response_format");
  CHECK(error_of(R"({"prompt": "x", "response_format": {"type": "json_schema"}})")
            .message.find("response_format.json_schema: expected an object") == 0);
  CHECK(error_of(R"({"prompt": "x", "response_format": {"type": "json_schema",
                     "json_schema": {"name": "p"}}})")
            .code == "missing_required");
  CHECK(error_of(R"({"prompt": "x", "response_format": {"type": "json_object"},
                     "guided_json": {}})")
            .message.find("both constrain the output") != std::string::npos);
}

TEST_CASE("openai request: a 100k-deep body is refused by its depth, not echoed") {
  const std::string deep = R"({"prompt": "x", "temperature": )" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  std::variant<OpenAiRequest, ApiError> r = parse_openai_request(deep, OpenAiKind::kCompletion);
  REQUIRE(std::holds_alternative<ApiError>(r));
  CHECK(std::get<ApiError>(r).message.find("nested deeper than 128 levels") != std::string::npos);
  // Shallow enough to parse, still shown in a bounded way.
  const std::string nested =
      R"({"prompt": "x", "temperature": )" + std::string(100, '[') + std::string(100, ']') + "}";
  const ApiError e = error_of(nested.c_str());
  CHECK(e.param == "temperature");
  CHECK(e.message.size() < 200);
}

}  // namespace dancemoe::node
