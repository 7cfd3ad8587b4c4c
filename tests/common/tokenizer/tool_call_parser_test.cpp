// Model output -> content, reasoning and OpenAI tool calls, per family
// format; fed whole and fed in every split (streaming).
#include "common/tokenizer/tool_call_parser.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/tokenizer/harmony_parser.h"

namespace dancemoe::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

// The output fed in pieces of `step` bytes, the deltas concatenated.
ModelOutput streamed(ToolCallFormat format, std::string_view text, size_t step,
                     ToolCallParserOptions options = {}) {
  ToolCallParser parser(format, std::move(options));
  ModelOutput all;
  auto add = [&](ModelOutput d) {
    all.content += d.content;
    all.reasoning += d.reasoning;
    for (ToolCall& c : d.tool_calls) all.tool_calls.push_back(std::move(c));
  };
  for (size_t i = 0; i < text.size(); i += step) add(parser.feed(text.substr(i, step)));
  add(parser.finish());
  return all;
}

// The same result whole and in every piece size from 1 byte up.
ModelOutput parse_all_ways(ToolCallFormat format, std::string_view text,
                           ToolCallParserOptions options = {}) {
  const ModelOutput whole = parse_model_output(format, text, options);
  for (size_t step = 1; step <= text.size(); ++step) {
    const ModelOutput pieces = streamed(format, text, step, options);
    INFO("piece size " << step);
    REQUIRE(pieces.content == whole.content);
    REQUIRE(pieces.reasoning == whole.reasoning);
    REQUIRE(pieces.tool_calls.size() == whole.tool_calls.size());
    for (size_t i = 0; i < whole.tool_calls.size(); ++i) {
      REQUIRE(pieces.tool_calls[i].name == whole.tool_calls[i].name);
      REQUIRE(pieces.tool_calls[i].arguments == whole.tool_calls[i].arguments);
      REQUIRE(pieces.tool_calls[i].id == whole.tool_calls[i].id);
    }
  }
  return whole;
}

Json args_of(const ToolCall& call) { return Json::parse(call.arguments); }

TEST_CASE("tool calls: the format follows the template's markers") {
  CHECK(detect_tool_call_format("... <tool_call>\\n{\"name\": ...") == ToolCallFormat::kHermes);
  CHECK(detect_tool_call_format("<tool_call>{{ tc.name }}<arg_key>") == ToolCallFormat::kGlm);
  CHECK(detect_tool_call_format("{{ '[TOOL_CALLS] [' }}") == ToolCallFormat::kMistral);
  CHECK(detect_tool_call_format("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>") ==
        ToolCallFormat::kDeepSeek);
  CHECK(detect_tool_call_format("<|start|>assistant<|channel|>final<|message|>") ==
        ToolCallFormat::kHarmony);
  CHECK(detect_tool_call_format("{{ '<|im_start|>' + message.content }}") == ToolCallFormat::kNone);
  CHECK(tool_call_format_name(ToolCallFormat::kGlm) == "glm");
}

TEST_CASE("tool calls: Hermes <tool_call> JSON blocks, with the text before them as content") {
  const ModelOutput out = parse_all_ways(
      ToolCallFormat::kHermes,
      "Let me check.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>");
  CHECK(out.content == "Let me check.");
  REQUIRE(out.tool_calls.size() == 2);
  CHECK(out.tool_calls[0].name == "get_weather");
  CHECK(args_of(out.tool_calls[0]) == Json{{"city", "Paris"}});
  CHECK(out.tool_calls[0].id.empty());
  CHECK(out.tool_calls[1].name == "get_time");
  CHECK(out.tool_calls[1].arguments == "{}");
}

TEST_CASE("tool calls: an answer without calls comes back unchanged, whitespace and all") {
  const std::string text = "  Plain answer with <b>tags</b> and <tool no call.\n\n";
  for (ToolCallFormat f : {ToolCallFormat::kNone, ToolCallFormat::kHermes, ToolCallFormat::kMistral,
                           ToolCallFormat::kDeepSeek, ToolCallFormat::kGlm}) {
    INFO(tool_call_format_name(f));
    const ModelOutput out = parse_all_ways(f, text);
    CHECK(out.content == text);
    CHECK(out.tool_calls.empty());
  }
}

TEST_CASE("tool calls: a call the model left open at the end still counts if its JSON is whole") {
  const ModelOutput out = parse_all_ways(
      ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n");
  REQUIRE(out.tool_calls.size() == 1);
  CHECK(args_of(out.tool_calls[0]) == Json{{"x", 1}});
}

TEST_CASE("tool calls: a malformed call is returned as text, not lost") {
  const std::string broken =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call>";
  const ModelOutput out = parse_all_ways(ToolCallFormat::kHermes, "ok " + broken);
  CHECK(out.tool_calls.empty());
  CHECK(out.content == "ok " + broken);
  const ModelOutput no_name =
      parse_all_ways(ToolCallFormat::kHermes, "<tool_call>{\"arguments\": {}}</tool_call>");
  CHECK(no_name.tool_calls.empty());
  CHECK(no_name.content == "<tool_call>{\"arguments\": {}}</tool_call>");
}

TEST_CASE("tool calls: streaming holds back only what may become a marker") {
  ToolCallParser parser(ToolCallFormat::kHermes);
  CHECK(parser.feed("Hello <to").content == "Hello");
  ModelOutput d = parser.feed("ol_call>{\"name\": \"f\", \"arguments\": {}}");
  CHECK(d.content.empty());
  CHECK(d.tool_calls.empty());  // not closed yet
  d = parser.feed("</tool_call>");
  REQUIRE(d.tool_calls.size() == 1);
  CHECK(d.tool_calls[0].name == "f");
  CHECK(parser.finish().empty());
}

TEST_CASE("tool calls: Mistral [TOOL_CALLS] arrays with their ids, and the name[ARGS] form") {
  const ModelOutput out = parse_all_ways(
      ToolCallFormat::kMistral,
      "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": "
      "\"abc123XYZ\"}, "
      "{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}, \"id\": \"def456UVW\"}]");
  CHECK(out.content.empty());
  REQUIRE(out.tool_calls.size() == 2);
  CHECK(out.tool_calls[0].id == "abc123XYZ");
  CHECK(out.tool_calls[1].name == "get_time");
  CHECK(args_of(out.tool_calls[1]) == Json{{"tz", "CET"}});
  const ModelOutput v11 = parse_all_ways(
      ToolCallFormat::kMistral,
      "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{}");
  REQUIRE(v11.tool_calls.size() == 2);
  CHECK(v11.tool_calls[0].name == "get_weather");
  CHECK(v11.tool_calls[1].arguments == "{}");
  // The call ends with its JSON: text after it is content again.
  const ModelOutput after =
      parse_all_ways(ToolCallFormat::kMistral,
                     "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"s\": \"]}\"}}] done");
  REQUIRE(after.tool_calls.size() == 1);
  CHECK(args_of(after.tool_calls[0]) == Json{{"s", "]}"}});
  CHECK(after.content == " done");
}

TEST_CASE("tool calls: DeepSeek V3.1 and V3/R1 call tokens") {
  const ModelOutput v31 = parse_all_ways(
      ToolCallFormat::kDeepSeek,
      "I'll look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": "
      "\"Paris\"}"
      "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><"
      "｜tool▁calls▁end｜>");
  CHECK(v31.content == "I'll look.");
  REQUIRE(v31.tool_calls.size() == 2);
  CHECK(v31.tool_calls[0].name == "get_weather");
  CHECK(args_of(v31.tool_calls[0]) == Json{{"city", "Paris"}});
  const ModelOutput v3 = parse_all_ways(ToolCallFormat::kDeepSeek,
                                        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<"
                                        "｜tool▁sep｜>get_weather\n```json\n{\"city\": "
                                        "\"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>");
  REQUIRE(v3.tool_calls.size() == 1);
  CHECK(v3.tool_calls[0].name == "get_weather");
  CHECK(args_of(v3.tool_calls[0]) == Json{{"city", "Paris"}});
  CHECK(v3.content.empty());
}

TEST_CASE("tool calls: GLM-4.5 argument values are JSON unless the schema says string") {
  ToolCallParserOptions options;
  options.tools = Json::parse(
      R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"code": {"type": "string"}, "n": {"type": "integer"}}}}}])");
  const ModelOutput out = parse_all_ways(
      ToolCallFormat::kGlm,
      "\n<tool_call>f\n<arg_key>code</arg_key>\n<arg_value>42</arg_value>\n<arg_key>n</arg_key>\n"
      "<arg_value>42</arg_value>\n<arg_key>tags</arg_key>\n<arg_value>[\"a\", \"b\"]</arg_value>\n"
      "<arg_key>note</arg_key>\n<arg_value>hello world</arg_value>\n</tool_call>",
      options);
  CHECK(out.content.empty());
  REQUIRE(out.tool_calls.size() == 1);
  CHECK(out.tool_calls[0].name == "f");
  CHECK(
      args_of(out.tool_calls[0]) ==
      Json{{"code", "42"}, {"n", 42}, {"tags", Json::array({"a", "b"})}, {"note", "hello world"}});
  const ModelOutput bare = parse_all_ways(ToolCallFormat::kGlm, "<tool_call>get_time</tool_call>");
  REQUIRE(bare.tool_calls.size() == 1);
  CHECK(bare.tool_calls[0].arguments == "{}");
}

TEST_CASE("tool calls: harmony channels split reasoning, content and function calls") {
  const ModelOutput answer =
      parse_all_ways(ToolCallFormat::kHarmony,
                     "<|channel|>analysis<|message|>User wants "
                     "2+2.<|end|><|start|>assistant<|channel|>final<|message|>4<|return|>");
  CHECK(answer.reasoning == "User wants 2+2.");
  CHECK(answer.content == "4");
  CHECK(answer.tool_calls.empty());
  const ModelOutput call = parse_all_ways(
      ToolCallFormat::kHarmony,
      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>");
  CHECK(call.reasoning == "Need weather.");
  CHECK(call.content.empty());
  REQUIRE(call.tool_calls.size() == 1);
  CHECK(call.tool_calls[0].name == "get_weather");
  CHECK(args_of(call.tool_calls[0]) == Json{{"city", "Paris"}});
  // The recipient may also come before the channel.
  const ModelOutput early = parse_all_ways(
      ToolCallFormat::kHarmony,
      "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>");
  REQUIRE(early.tool_calls.size() == 1);
  CHECK(early.tool_calls[0].name == "f");
}

TEST_CASE("tool calls: harmony streams bodies as they come and passes non-harmony text through") {
  ToolCallParser parser(ToolCallFormat::kHarmony);
  CHECK(parser.feed("<|channel|>final<|message|>Hel").content == "Hel");
  CHECK(parser.feed("lo<|e").content == "lo");
  CHECK(parser.feed("nd|>").empty());
  CHECK(parser.finish().empty());
  const ModelOutput plain = parse_model_output(ToolCallFormat::kHarmony, "just text");
  CHECK(plain.content == "just text");
}

// Found by libFuzzer: a <|message|> starting beyond the header bound was a
// header when the text came whole, raw text when it came in pieces.
TEST_CASE("tool calls: harmony decides header or raw text at its bound, however the text comes") {
  for (size_t start : {kMaxHarmonyHeaderBytes - 3, kMaxHarmonyHeaderBytes,
                       kMaxHarmonyHeaderBytes + 1, kMaxHarmonyHeaderBytes + 40}) {
    CAPTURE(start);
    const std::string text = std::string(start, 'x') + "<|message|>hi<|end|><|start|>ab";
    const ModelOutput whole = parse_all_ways(ToolCallFormat::kHarmony, text);
    if (start <= kMaxHarmonyHeaderBytes) {
      CHECK(whole.content == "hi");  // a header (of no channel), its body, a header left open
    } else {
      CHECK(whole.content == text);  // not harmony: passed through
    }
  }
}

TEST_CASE("tool calls: a call body beyond max_call_bytes is given up as text (bounded memory)") {
  ToolCallParserOptions options;
  options.max_call_bytes = 64;
  ToolCallParser parser(ToolCallFormat::kHermes, options);
  std::string content;
  content += parser.feed("<tool_call>").content;
  for (int i = 0; i < 100; ++i) content += parser.feed("xxxxxxxxxx").content;
  content += parser.finish().content;
  CHECK(content.size() == std::string("<tool_call>").size() + 1000);
}

TEST_CASE("tool calls: deeply nested JSON in a call is refused, not parsed recursively") {
  const std::string deep =
      "<tool_call>{\"name\": \"f\", \"arguments\": " + std::string(100000, '[') + "}</tool_call>";
  const ModelOutput out = parse_model_output(ToolCallFormat::kHermes, deep);
  CHECK(out.tool_calls.empty());
  CHECK(out.content == deep);
}

TEST_CASE("tool calls: a call with bytes that are not UTF-8 in its name or raw values stays text") {
  // Found by tool_call_parser_fuzz: such a call made JSON dumping throw.
  const std::string glm =
      "<tool_call>f\n<arg_key>k</arg_key>\n<arg_value>\x80</arg_value></tool_call>";
  const ModelOutput a = parse_model_output(ToolCallFormat::kGlm, glm);
  CHECK(a.tool_calls.empty());
  CHECK(a.content == glm);
  const std::string deepseek = "<｜tool▁call▁begin｜>\xff<｜tool▁sep｜>{}<｜tool▁call▁end｜>";
  const ModelOutput b = parse_model_output(ToolCallFormat::kDeepSeek, deepseek);
  CHECK(b.tool_calls.empty());
  CHECK(b.content == deepseek);
  const std::string harmony = "<|channel|>commentary to=functions.\xc3 <|message|>{}<|call|>";
  CHECK(parse_model_output(ToolCallFormat::kHarmony, harmony).tool_calls.empty());
}

TEST_CASE(
    "tool calls: a forced prefix and the model's continuation parse as a call in every format") {
  struct Case {
    ToolCallFormat format;
    const char* continuation;  // what a model writes after the named prefix
    const char* required;      // what it writes after the bare marker
  };
  const Case cases[] = {
      {ToolCallFormat::kHermes, R"({"city": "Paris"}}
</tool_call>)",
       R"({"name": "get_weather", "arguments": {"city": "Paris"}}
</tool_call>)"},
      {ToolCallFormat::kMistral, R"({"city": "Paris"}}])",
       R"([{"name": "get_weather", "arguments": {"city": "Paris"}}])"},
      {ToolCallFormat::kDeepSeek, R"({"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>)",
       R"(get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>)"},
      {ToolCallFormat::kGlm, "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
       "get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"},
      {ToolCallFormat::kHarmony, R"({"city": "Paris"}<|call|>)",
       R"(get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>)"},
  };
  for (const Case& c : cases) {
    INFO(tool_call_format_name(c.format));
    for (bool named : {true, false}) {
      const std::string text = forced_call_prefix(c.format, named ? "get_weather" : "") +
                               (named ? c.continuation : c.required);
      const ModelOutput out = parse_all_ways(c.format, text);
      REQUIRE(out.tool_calls.size() == 1);
      CHECK(out.tool_calls[0].name == "get_weather");
      CHECK(args_of(out.tool_calls[0]) == Json{{"city", "Paris"}});
      CHECK(out.content.empty());
    }
  }
  CHECK(forced_call_prefix(ToolCallFormat::kNone, "f").empty());
}

TEST_CASE("tool calls: a forced prefix, a constrained JSON body and the suffix make one call") {
  const std::string args = R"({"city": "Paris"})";
  const std::string call = R"({"name": "get_weather", "arguments": {"city": "Paris"}})";
  for (ToolCallFormat format :
       {ToolCallFormat::kHermes, ToolCallFormat::kMistral, ToolCallFormat::kDeepSeek,
        ToolCallFormat::kGlm, ToolCallFormat::kHarmony, ToolCallFormat::kNone}) {
    INFO(tool_call_format_name(format));
    for (bool named : {true, false}) {
      INFO("named: " << named);
      const ForcedCallBody body = forced_call_body(format, named);
      if (body == ForcedCallBody::kNone) {
        CHECK(forced_call_suffix(format, named).empty());
        continue;
      }
      const std::string json = body == ForcedCallBody::kArguments ? args
                               : body == ForcedCallBody::kCall    ? call
                                                                  : "[" + call + "]";
      const std::string text = forced_call_prefix(format, named ? "get_weather" : "") + json +
                               forced_call_suffix(format, named);
      const ModelOutput out = parse_all_ways(format, text);
      REQUIRE(out.tool_calls.size() == 1);
      CHECK(out.tool_calls[0].name == "get_weather");
      CHECK(args_of(out.tool_calls[0]) == Json{{"city", "Paris"}});
      CHECK(out.content.empty());
    }
  }
  CHECK(forced_call_body(ToolCallFormat::kGlm, true) == ForcedCallBody::kNone);
  CHECK(forced_call_body(ToolCallFormat::kHermes, false) == ForcedCallBody::kCall);
  CHECK(forced_call_body(ToolCallFormat::kMistral, false) == ForcedCallBody::kCallList);
  CHECK(forced_call_body(ToolCallFormat::kHarmony, false) == ForcedCallBody::kNone);
}

}  // namespace
}  // namespace dancemoe::tokenizer
