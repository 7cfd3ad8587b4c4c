// Tool calling over HTTP with a real node (issue 16): a synthetic model
// given Qwen3's own chat template (tests/fixtures/chat_templates), so the
// tools are rendered by the template and calls are written in its Hermes
// format. The weights are random: a forced call (a named function, or
// "required") is generated under the tool's parameters schema, so it always
// parses; "auto" is whatever the model writes.
#include <doctest/doctest.h>

#include <set>

#include "tests/integration/openai_node.h"

namespace dancemoe::testing {
namespace {

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Current weather",
   "parameters": {"type": "object", "properties": {
     "city": {"type": "string", "maxLength": 12},
     "unit": {"enum": ["celsius", "fahrenheit"]}},
   "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
   "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"],
   "additionalProperties": false}}}])");

const json kMessages = json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}});

// The "data: {...}" events of an SSE body, [DONE] excluded.
std::vector<json> tools_sse_events(const std::string& body) {
  std::vector<json> events;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const std::string data = body.substr(at + 6, end - at - 6);
    if (data != "[DONE]") events.push_back(json::parse(data));
    at = end + 2;
  }
  return events;
}

// A call of get_weather whose arguments follow its schema.
void check_tool_weather_call(const json& call) {
  INFO("call: " << call.dump());
  CHECK(call["type"] == "function");
  CHECK(call["id"].get<std::string>().rfind("call_", 0) == 0);
  CHECK(call["function"]["name"] == "get_weather");
  const json args = json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  REQUIRE(args.is_object());
  CHECK(args.size() == 2);
  REQUIRE(args["city"].is_string());
  CHECK((args["unit"] == "celsius" || args["unit"] == "fahrenheit"));
}

void check_tool_error(const OpenAiTestNode::Reply& r, const std::string& param) {
  INFO("reply " << r.status << " " << r.raw);
  CHECK(r.status == 400);
  REQUIRE(r.body.is_object());
  CHECK(r.body["error"]["param"] == param);
}

}  // namespace

TEST_CASE("openai tools: forced calls parse, whole and streamed, and the tool's answer is a turn") {
  OpenAiTestNode n({}, "tiny", "127.0.0.1:0", "qwen3.jinja");
  const json named = {
      {"messages", kMessages},
      {"tools", kTools},
      {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
      {"max_tokens", 200},
      {"temperature", 0}};
  const auto whole = n.post("/v1/chat/completions", named.dump());
  INFO("reply: " << whole.raw);
  REQUIRE(whole.status == 200);
  const json& choice = whole.body["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  CHECK(choice["message"]["content"].is_null());
  REQUIRE(choice["message"]["tool_calls"].size() == 1);
  check_tool_weather_call(choice["message"]["tool_calls"][0]);

  // Streamed: the call arrives as one indexed delta, then finish_reason.
  json streamed = named;
  streamed["stream"] = true;
  const auto s = n.post("/v1/chat/completions", streamed.dump());
  REQUIRE(s.status == 200);
  json call;
  std::string last_reason;
  std::string content;
  for (const json& e : tools_sse_events(s.raw)) {
    for (const json& c : e["choices"]) {
      if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
      if (c["delta"].contains("tool_calls")) {
        CHECK(call.is_null());
        REQUIRE(c["delta"]["tool_calls"].size() == 1);
        call = c["delta"]["tool_calls"][0];
      }
      if (!c["finish_reason"].is_null()) last_reason = c["finish_reason"];
    }
  }
  CHECK(content.empty());
  CHECK(last_reason == "tool_calls");
  REQUIRE(call.is_object());
  CHECK(call["index"] == 0);
  check_tool_weather_call(call);
  // Greedy: the stream wrote the same arguments.
  CHECK(call["function"]["arguments"] ==
        choice["message"]["tool_calls"][0]["function"]["arguments"]);

  // "required" with two tools: a call of one of them.
  json required = named;
  required["tool_choice"] = "required";
  required["temperature"] = 1;
  std::set<std::string> names;
  for (int seed : {1, 2, 3}) {
    required["seed"] = seed;
    const auto r = n.post("/v1/chat/completions", required.dump());
    INFO("reply: " << r.raw);
    REQUIRE(r.status == 200);
    CHECK(r.body["choices"][0]["finish_reason"] == "tool_calls");
    const json& calls = r.body["choices"][0]["message"]["tool_calls"];
    REQUIRE(calls.size() == 1);
    const std::string name = calls[0]["function"]["name"];
    CHECK((name == "get_weather" || name == "get_time"));
    if (name == "get_weather") check_tool_weather_call(calls[0]);
    CHECK(json::parse(calls[0]["function"]["arguments"].get<std::string>()).is_object());
  }

  // The next turn: the assistant's call and the tool's answer, rendered by
  // the template into a longer prompt.
  json followup = {{"messages", kMessages}, {"tools", kTools}, {"max_tokens", 8}};
  followup["messages"].push_back(choice["message"]);
  followup["messages"].push_back({{"role", "tool"},
                                  {"tool_call_id", choice["message"]["tool_calls"][0]["id"]},
                                  {"content", "sunny, 24 degrees"}});
  const auto next = n.post("/v1/chat/completions", followup.dump());
  INFO("follow-up: " << next.raw);
  REQUIRE(next.status == 200);
  CHECK(next.body["usage"]["prompt_tokens"].get<int64_t>() >
        whole.body["usage"]["prompt_tokens"].get<int64_t>());
  const json& message = next.body["choices"][0]["message"];
  CHECK((message["content"].is_string() || message["tool_calls"].is_array()));

  // "auto": the model writes what it writes; the answer has OpenAI's shape.
  json automatic = {{"messages", kMessages}, {"tools", kTools}, {"max_tokens", 16}};
  const auto a = n.post("/v1/chat/completions", automatic.dump());
  REQUIRE(a.status == 200);
  const std::string reason = a.body["choices"][0]["finish_reason"];
  CHECK((reason == "stop" || reason == "length" || reason == "tool_calls"));

  // chat_template_kwargs reach the template: Qwen3 without thinking ends
  // the prompt with an empty <think></think>.
  json thinking = {{"messages", kMessages}, {"max_tokens", 1}};
  const auto plain = n.post("/v1/chat/completions", thinking.dump());
  thinking["chat_template_kwargs"] = {{"enable_thinking", false}};
  const auto no_think = n.post("/v1/chat/completions", thinking.dump());
  REQUIRE(plain.status == 200);
  REQUIRE(no_think.status == 200);
  CHECK(no_think.body["usage"]["prompt_tokens"].get<int64_t>() >
        plain.body["usage"]["prompt_tokens"].get<int64_t>());
}

TEST_CASE("openai tools: bad tool requests are 400s naming the field") {
  OpenAiTestNode n({}, "tiny", "127.0.0.1:0", "qwen3.jinja");
  json no_id = {{"messages", kMessages}, {"tools", kTools}};
  no_id["messages"].push_back({{"role", "tool"}, {"content", "sunny"}});
  check_tool_error(n.post("/v1/chat/completions", no_id.dump()), "messages[1].tool_call_id");
  json unknown = {{"messages", kMessages},
                  {"tools", kTools},
                  {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_news"}}}}}};
  check_tool_error(n.post("/v1/chat/completions", unknown.dump()), "tool_choice");
  check_tool_error(
      n.post("/v1/chat/completions",
             json{{"messages", kMessages}, {"chat_template_kwargs", "thinking"}}.dump()),
      "chat_template_kwargs");
  // A strict tool whose schema constrained decoding cannot follow.
  json strict = {{"messages", kMessages}, {"tool_choice", "required"}};
  strict["tools"] = json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "zip"},
          {"strict", true},
          {"parameters",
           {{"type", "object"},
            {"properties", {{"code", {{"type", "string"}, {"pattern", "^[0-9]+$"}}}}}}}}}}});
  check_tool_error(n.post("/v1/chat/completions", strict.dump()), "tools");

  // The synthetic tokenizer's own ChatML template renders no tools.
  OpenAiTestNode chatml;
  const auto r =
      chatml.post("/v1/chat/completions", json{{"messages", kMessages}, {"tools", kTools}}.dump());
  check_tool_error(r, "tools");
  CHECK(r.body["error"]["code"] == "tools_unsupported");
  // tool_choice "none" renders no tools: accepted.
  CHECK(chatml
            .post("/v1/chat/completions", json{{"messages", kMessages},
                                               {"tools", kTools},
                                               {"tool_choice", "none"},
                                               {"max_tokens", 2}}
                                              .dump())
            .status == 200);
}

}  // namespace dancemoe::testing
