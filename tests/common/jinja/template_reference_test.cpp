// The interpreter against an independent renderer: every published chat
// template in tests/fixtures/chat_templates, over conversations that reach
// their branches (system turns, multi-turn, tools, tool calls with arguments
// as objects and as JSON text, tool results, reasoning, thinking switches),
// rendered here and by Debian's python3-jinja2 set up as HF transformers
// sets it up (render_reference.py). Outputs must be byte-identical; where
// jinja2 refuses a conversation, so must we. Needs python3-jinja2
// (deploy/install-deps.sh): without it the test fails under CI and is
// skipped elsewhere.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/jinja/template.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"

namespace dancemoe::jinja {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kNow = 1754395200;  // 2025-08-05 12:00 UTC

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Json conversations() {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Get the weather in a city", "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "description": "The city"}, "unit": {"type": "string", "enum": ["c", "f"],
      "default": "c"}, "days": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["city"]}}}])");
  Json out = Json::array();
  auto add = [&](Json messages, Json extra) {
    Json v = {{"messages", std::move(messages)}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
    for (auto& [k, value] : extra.items()) v[k] = value;
    out.push_back(std::move(v));
  };
  add(Json::parse(
          R"([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Weather?"}])"),
      Json{{"add_generation_prompt", true}});
  add(Json::parse(R"([{"role": "user", "content": "Hi é 😀 \"quoted\" \\ <tag>"}])"),
      Json{{"add_generation_prompt", false}});
  add(Json::parse(R"([{"role": "user", "content": "Hi"}])"),
      Json{{"add_generation_prompt", true}, {"tools", nullptr}});
  for (const char* args : {R"({"city": "Paris", "days": 2, "tags": ["a", "b"]})",
                           R"("{\"city\": \"Paris\", \"days\": 2}")"}) {
    for (const char* content : {"null", "\"\""}) {
      Json messages = Json::parse(std::string(R"([{"role": "system", "content": "Use tools."},
          {"role": "user", "content": "Weather in Paris?"},
          {"role": "assistant", "content": )") +
                                  content + R"(, "tool_calls": [{"id": "call12345",
          "type": "function", "function": {"name": "get_weather", "arguments": )" +
                                  args + R"(}}]},
          {"role": "tool", "tool_call_id": "call12345", "content": "{\"temp\": 21}"},
          {"role": "assistant", "content": "It is 21 C."}, {"role": "user", "content": "Thanks"}])");
      add(messages, Json{{"add_generation_prompt", true}, {"tools", tools}});
    }
  }
  add(Json::parse(R"([{"role": "user", "content": "2+2?"}, {"role": "assistant",
      "content": "<think>\nadd\n</think>\n\n4", "reasoning_content": "add"}, {"role": "user", "content": "3+3?"}])"),
      Json{{"add_generation_prompt", true}, {"enable_thinking", false}});
  add(Json::parse(R"([{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4",
      "thinking": "add them", "reasoning_content": "add them"}])"),
      Json{{"add_generation_prompt", false}, {"reasoning_effort", "high"}, {"thinking", true}});
  add(Json::parse(R"([{"role": "user", "content": "2+2?"}])"), Json{{"add_generation_prompt", true},
                                                                    {"thinking", true},
                                                                    {"enable_thinking", true},
                                                                    {"tools", tools}});
  add(Json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])"),
      Json{{"add_generation_prompt", true}});
  return out;
}

TEST_CASE(
    "jinja reference: the published chat templates render byte for byte as jinja2 renders them") {
  const std::filesystem::path dir =
      dancemoe::testing::source_dir() / "tests/fixtures/chat_templates";
  const dancemoe::testing::ProcessResult probe = dancemoe::testing::run_process(
      {"/usr/bin/python3", "-c", "import jinja2"}, std::chrono::seconds(30));
  if (probe.exit_code != 0) {
    if (std::getenv("CI") != nullptr) FAIL("python3-jinja2 is missing: run deploy/install-deps.sh");
    MESSAGE("SKIPPED: python3-jinja2 is not installed (deploy/install-deps.sh installs it)");
    return;
  }
  Json cases = Json::array();
  std::vector<std::string> labels;
  const Json convs = conversations();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".jinja") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 9);
  for (const auto& file : files) {
    for (size_t i = 0; i < convs.size(); ++i) {
      cases.push_back(Json{{"source", read(file)}, {"variables", convs[i]}, {"now", kNow}});
      labels.push_back(file.filename().string() + " / conversation " + std::to_string(i));
    }
  }
  // The reference reads its cases from a file (stdin of run_process is not ours).
  const dancemoe::testing::TempDir tmp("jinja_reference");
  const std::filesystem::path input = tmp.path() / "cases.json";
  std::ofstream(input) << cases.dump();
  const dancemoe::testing::ProcessResult ref =
      dancemoe::testing::run_process({"/bin/sh", "-c", "/usr/bin/python3 \"$0\" < \"$1\"",
                                      (dir / "render_reference.py").string(), input.string()},
                                     std::chrono::seconds(120));
  REQUIRE_MESSAGE(ref.exit_code == 0, ref.err);
  const Json expected = Json::parse(ref.out);
  REQUIRE(expected.size() == cases.size());
  size_t rendered = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(labels[i]);
    Result<Template> t = Template::parse(cases[i]["source"].get<std::string>());
    REQUIRE_MESSAGE(t.is_ok(), t.status().message());
    RenderOptions options;
    options.now = std::chrono::system_clock::from_time_t(kNow);
    Result<std::string> ours = t->render(cases[i]["variables"], options);
    const bool ref_ok = expected[i]["ok"].get<bool>();
    const std::string ref_text = expected[i]["text"].get<std::string>();
    INFO("jinja2: " << ref_text);
    INFO("ours: " << (ours.is_ok() ? *ours : ours.status().message()));
    REQUIRE(ours.is_ok() == ref_ok);
    if (ref_ok) {
      CHECK(*ours == ref_text);
      ++rendered;
    }
  }
  // Most cases render (the rest are refusals both sides agree on).
  CHECK(rendered * 3 > cases.size() * 2);
}

}  // namespace
}  // namespace dancemoe::jinja
