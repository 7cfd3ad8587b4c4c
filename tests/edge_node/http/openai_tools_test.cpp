#include "edge_node/http/openai_tools.h"

#include <doctest/doctest.h>

#include <set>

namespace dancemoe::node {
namespace {

using Json = nlohmann::ordered_json;

const char* kWeather =
    R"({"type": "function", "function": {"name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})";

Json body_with(const std::string& fields) { return Json::parse("{" + fields + "}"); }

ApiError refused(const std::string& fields) {
  auto r = parse_tools_request(body_with(fields));
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r);
}

ToolsRequest accepted(const std::string& fields) {
  auto r = parse_tools_request(body_with(fields));
  if (const ApiError* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  return std::get<ToolsRequest>(r);
}

TEST_CASE("openai tools: tools and tool_choice are read in the client's order, auto by default") {
  const ToolsRequest r = accepted(std::string(R"("tools": [)") + kWeather + "]");
  REQUIRE(r.tools.is_array());
  CHECK(r.tools[0]["function"].begin().key() == "name");
  CHECK(r.choice == ToolChoiceMode::kAuto);
  CHECK(r.active());
  CHECK_FALSE(accepted(R"("tools": null)").active());
  CHECK_FALSE(accepted(R"("tools": [])").active());
  CHECK_FALSE(
      accepted(std::string(R"("tool_choice": "none", "tools": [)") + kWeather + "]").active());
  const ToolsRequest named = accepted(
      std::string(R"("tool_choice": {"type": "function", "function": {"name": "get_weather"}},)") +
      R"("parallel_tool_calls": false, "tools": [)" + kWeather + "]");
  CHECK(named.choice == ToolChoiceMode::kFunction);
  CHECK(named.function == "get_weather");
  CHECK(accepted(std::string(R"("tool_choice": "required", "tools": [)") + kWeather + "]").choice ==
        ToolChoiceMode::kRequired);
}

TEST_CASE("openai tools: malformed tools and choices are refused naming the field") {
  CHECK(refused(R"("tools": {})").param == "tools");
  CHECK(refused(R"("tools": [{"type": "retrieval"}])").message.find("tools[0].type") !=
        std::string::npos);
  CHECK(refused(R"("tools": [{"type": "function", "function": {"name": "a b"}}])")
            .message.find("tools[0].function.name") != std::string::npos);
  CHECK(refused(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}])")
            .message.find("parameters") != std::string::npos);
  CHECK(refused(R"("tool_choice": "sometimes")").param == "tool_choice");
  CHECK(refused(R"("tool_choice": "required")").message.find("needs tools") != std::string::npos);
  const ApiError unknown = refused(
      std::string(R"("tool_choice": {"type": "function", "function": {"name": "other"}},)") +
      R"("tools": [)" + kWeather + "]");
  CHECK(unknown.param == "tool_choice");
  CHECK(unknown.message.find("'other'") != std::string::npos);
  CHECK(refused(R"("parallel_tool_calls": "yes")").param == "parallel_tool_calls");
  Json many = Json::array();
  for (size_t i = 0; i <= kMaxTools; ++i) many.push_back(Json::parse(kWeather));
  auto r = parse_tools_request(Json{{"tools", many}});
  REQUIRE(std::holds_alternative<ApiError>(r));
}

TEST_CASE("openai tools: calls get the model's id or a fresh call_ id, deltas are indexed") {
  const std::vector<tokenizer::ToolCall> calls = {{"", "get_weather", R"({"city":"Paris"})"},
                                                  {"abc123XYZ", "get_time", "{}"}};
  const nlohmann::json message = tool_calls_json(calls);
  REQUIRE(message.size() == 2);
  const std::string id = message[0]["id"];
  CHECK(id.starts_with("call_"));
  CHECK(id.size() == 29);
  CHECK(message[0]["type"] == "function");
  CHECK(message[0]["function"]["name"] == "get_weather");
  CHECK(message[0]["function"]["arguments"] == R"({"city":"Paris"})");
  CHECK(message[1]["id"] == "abc123XYZ");
  const nlohmann::json deltas = tool_call_deltas_json(calls, 3);
  CHECK(deltas[0]["index"] == 3);
  CHECK(deltas[1]["index"] == 4);
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) ids.insert(new_tool_call_id());
  CHECK(ids.size() == 100);
}

}  // namespace
}  // namespace dancemoe::node
