#include "edge_node/http/openai_tools.h"

#include <doctest/doctest.h>

#include <set>

#include "common/generation/grammar_matcher.h"

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
  CHECK_FALSE(named.parallel);
  CHECK(r.parallel);
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

namespace {

bool grammar_accepts(const std::shared_ptr<const Grammar>& grammar, const std::string& text) {
  GrammarMatcher matcher(grammar);
  GrammarMatcher::StateId state = matcher.initial();
  for (char c : text) {
    state = matcher.advance(state, static_cast<uint8_t>(c));
    if (state == GrammarMatcher::kRejected) return false;
  }
  return matcher.accepting(state);
}

ForcedToolCall forced_of(tokenizer::ToolCallFormat format, const std::string& fields) {
  auto r = forced_tool_call(format, accepted(fields));
  if (const ApiError* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  const std::optional<ForcedToolCall>& forced = std::get<std::optional<ForcedToolCall>>(r);
  REQUIRE(forced.has_value());
  return *forced;
}

const char* kTime =
    R"({"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
        "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"],
        "additionalProperties": false}}})";

}  // namespace

TEST_CASE("openai tools: a named function is forced with its arguments under the schema") {
  using tokenizer::ToolCallFormat;
  const std::string named =
      std::string(R"("tool_choice": {"type": "function", "function": {"name": "get_time"}},)") +
      R"("tools": [)" + kWeather + "," + kTime + "]";
  const ForcedToolCall f = forced_of(ToolCallFormat::kHermes, named);
  CHECK(f.prefix == tokenizer::forced_call_prefix(ToolCallFormat::kHermes, "get_time"));
  CHECK(f.suffix == "}\n</tool_call>");
  REQUIRE(f.grammar != nullptr);
  CHECK(grammar_accepts(f.grammar, R"({"zone":"CET"})"));
  CHECK_FALSE(grammar_accepts(f.grammar, R"({"zone":"PST"})"));
  CHECK_FALSE(grammar_accepts(f.grammar, R"({"city":"Paris"})"));
  // The prefix, what the grammar allows and the suffix parse as the call.
  const tokenizer::ModelOutput out = tokenizer::parse_model_output(
      ToolCallFormat::kHermes, f.prefix + R"({"zone":"CET"})" + f.suffix);
  REQUIRE(out.tool_calls.size() == 1);
  CHECK(out.tool_calls[0].name == "get_time");
  CHECK(out.tool_calls[0].arguments == R"({"zone":"CET"})");

  // GLM writes arguments as tags: the prefix only.
  const ForcedToolCall glm = forced_of(ToolCallFormat::kGlm, named);
  CHECK(glm.grammar == nullptr);
  CHECK(glm.suffix.empty());
  CHECK(glm.prefix == "<tool_call>get_time\n");
}

TEST_CASE("openai tools: required is a call of any tool, or the only tool named") {
  using tokenizer::ToolCallFormat;
  const std::string two =
      std::string(R"("tool_choice": "required", "tools": [)") + kWeather + "," + kTime + "]";
  const ForcedToolCall hermes = forced_of(ToolCallFormat::kHermes, two);
  CHECK(hermes.prefix == "<tool_call>\n");
  REQUIRE(hermes.grammar != nullptr);
  CHECK(grammar_accepts(hermes.grammar, R"({"name":"get_time","arguments":{"zone":"UTC"}})"));
  CHECK(grammar_accepts(hermes.grammar, R"({"name":"get_weather","arguments":{"city":"Rome"}})"));
  CHECK_FALSE(grammar_accepts(hermes.grammar, R"({"name":"other","arguments":{}})"));
  const ForcedToolCall mistral = forced_of(ToolCallFormat::kMistral, two);
  REQUIRE(mistral.grammar != nullptr);
  CHECK(grammar_accepts(mistral.grammar, R"([{"name":"get_time","arguments":{"zone":"UTC"}}])"));
  // Harmony names the function before its JSON: free with several tools...
  const ForcedToolCall harmony = forced_of(ToolCallFormat::kHarmony, two);
  CHECK(harmony.grammar == nullptr);
  CHECK(harmony.prefix == "<|channel|>commentary to=functions.");
  // ... and the only tool named when there is one.
  const ForcedToolCall one =
      forced_of(ToolCallFormat::kHarmony,
                std::string(R"("tool_choice": "required", "tools": [)") + kTime + "]");
  CHECK(one.prefix == tokenizer::forced_call_prefix(ToolCallFormat::kHarmony, "get_time"));
  REQUIRE(one.grammar != nullptr);
  CHECK(one.suffix == "<|call|>");

  // Nothing is forced for auto and none.
  for (const char* choice : {"auto", "none"}) {
    auto r = forced_tool_call(
        ToolCallFormat::kHermes,
        accepted(std::string(R"("tool_choice": ")") + choice + R"(", "tools": [)" + kTime + "]"));
    REQUIRE(std::holds_alternative<std::optional<ForcedToolCall>>(r));
    CHECK_FALSE(std::get<std::optional<ForcedToolCall>>(r).has_value());
  }
}

TEST_CASE("openai tools: parameters the grammar cannot follow: free, or a 400 for a strict tool") {
  using tokenizer::ToolCallFormat;
  const char* patterned =
      R"({"type": "function", "function": {"name": "zip", %s "parameters": {"type": "object",
          "properties": {"code": {"type": "string", "pattern": "^[0-9]+$"}}}}})";
  char loose[512];
  char strict[512];
  std::snprintf(loose, sizeof loose, patterned, "");
  std::snprintf(strict, sizeof strict, patterned, R"("strict": true,)");
  const std::string choice = R"("tool_choice": {"type": "function", "function": {"name": "zip"}},)";
  const ForcedToolCall free =
      forced_of(ToolCallFormat::kHermes, choice + R"("tools": [)" + std::string(loose) + "]");
  CHECK(free.grammar == nullptr);
  CHECK(free.suffix.empty());
  CHECK_FALSE(free.prefix.empty());
  auto r = forced_tool_call(ToolCallFormat::kHermes,
                            accepted(choice + R"("tools": [)" + kTime + "," + strict + "]"));
  REQUIRE(std::holds_alternative<ApiError>(r));
  const ApiError e = std::get<ApiError>(r);
  CHECK(e.param == "tools");
  CHECK(e.code == "unsupported_schema");
  CHECK(e.message.find("tools[1].function.parameters") != std::string::npos);
  CHECK(e.message.find("pattern") != std::string::npos);
}

}  // namespace dancemoe::node
