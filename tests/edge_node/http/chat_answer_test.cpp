#include "edge_node/http/chat_answer.h"

#include <doctest/doctest.h>

namespace dancemoe::node {
namespace {

using tokenizer::ModelOutput;
using tokenizer::ToolCallFormat;

// The answer fed in pieces of `step` bytes, everything it decided joined.
ModelOutput run(const ChatAnswerOptions& options, const std::string& text, size_t step,
                bool stopped = true) {
  ChatAnswer answer(options);
  ModelOutput all;
  auto add = [&all](ModelOutput&& d) {
    all.content += d.content;
    all.reasoning += d.reasoning;
    for (auto& call : d.tool_calls) all.tool_calls.push_back(std::move(call));
  };
  for (size_t i = 0; i < text.size(); i += step) add(answer.feed(text.substr(i, step)));
  add(answer.finish(stopped));
  return all;
}

TEST_CASE("chat answer: without tools or markers the content is the text as generated") {
  const ChatAnswerOptions plain;
  const std::string text = "Hello <tool_call>{\"name\": \"f\"}</tool_call> <think>x</think>";
  for (size_t step : {1, 3, 100}) {
    const ModelOutput out = run(plain, text, step);
    CHECK(out.content == text);
    CHECK(out.tool_calls.empty());
  }
  CHECK_FALSE(plain.reports_reasoning());
  CHECK_FALSE(plain.keeps_special_tokens());
}

TEST_CASE("chat answer: thinking, then content and tool calls (Qwen3 with tools)") {
  ChatAnswerOptions options;
  options.reasoning = ReasoningMarkers{};
  options.parse = true;
  options.format = ToolCallFormat::kHermes;
  const std::string text =
      "<think>the user wants weather</think>\n\nLet me check.\n<tool_call>\n{\"name\": "
      "\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  for (size_t step : {1, 2, 7, 1000}) {
    INFO("step " << step);
    const ModelOutput out = run(options, text, step);
    CHECK(out.reasoning == "the user wants weather");
    CHECK(out.content == "Let me check.");
    REQUIRE(out.tool_calls.size() == 1);
    CHECK(out.tool_calls[0].name == "get_weather");
    CHECK(out.tool_calls[0].arguments == R"({"city":"Paris"})");
  }
  CHECK(options.reports_reasoning());
  CHECK(options.keeps_special_tokens());
}

TEST_CASE("chat answer: parallel_tool_calls false keeps the first call of several") {
  ChatAnswerOptions options;
  options.parse = true;
  options.format = ToolCallFormat::kHermes;
  const std::string text =
      "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>";
  for (size_t step : {1, 5, 1000}) {
    INFO("step " << step);
    CHECK(run(options, text, step).tool_calls.size() == 2);
    options.max_tool_calls = 1;
    const ModelOutput one = run(options, text, step);
    REQUIRE(one.tool_calls.size() == 1);
    CHECK(one.tool_calls[0].name == "a");
    options.max_tool_calls = 0;
  }
}

TEST_CASE("chat answer: a forced call's prefix comes first, its suffix only after a stop") {
  ChatAnswerOptions options;
  options.parse = true;
  options.format = ToolCallFormat::kHermes;
  options.forced_prefix = tokenizer::forced_call_prefix(ToolCallFormat::kHermes, "get_time");
  options.forced_suffix = tokenizer::forced_call_suffix(ToolCallFormat::kHermes, true);
  const ModelOutput out = run(options, R"({"zone":"UTC"})", 2);
  REQUIRE(out.tool_calls.size() == 1);
  CHECK(out.tool_calls[0].name == "get_time");
  CHECK(out.tool_calls[0].arguments == R"({"zone":"UTC"})");
  CHECK(out.content.empty());
  // Cut off by max_tokens: no call, and the text (prefix included) is kept.
  const ModelOutput cut = run(options, R"({"zone":"U)", 2, /*stopped=*/false);
  CHECK(cut.tool_calls.empty());
  CHECK(cut.content == options.forced_prefix + R"({"zone":"U)");
  // Cut off by a stop string ("stop", but the JSON is partial): the same, and
  // no closing text the model never wrote.
  const ModelOutput stopped = run(options, R"({"zone":"U)", 2, /*stopped=*/true);
  CHECK(stopped.tool_calls.empty());
  CHECK(stopped.content == options.forced_prefix + R"({"zone":"U)");
  CHECK(stopped.content.find("</tool_call>") == std::string::npos);
}

TEST_CASE("chat answer: gpt-oss's analysis channel is the reasoning, final the content") {
  ChatAnswerOptions options;
  options.parse = true;
  options.format = ToolCallFormat::kHarmony;
  const std::string text =
      "<|channel|>analysis<|message|>Think first.<|end|><|start|>assistant<|channel|>final"
      "<|message|>The answer.";
  for (size_t step : {1, 5, 1000}) {
    const ModelOutput out = run(options, text, step);
    CHECK(out.reasoning == "Think first.");
    CHECK(out.content == "The answer.");
  }
  CHECK(options.reports_reasoning());
}

}  // namespace
}  // namespace dancemoe::node
