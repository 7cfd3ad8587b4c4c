// The published chat templates of the supported families
// (tests/fixtures/chat_templates), rendered through ChatTemplate; every
// expected prompt is written from the family's documented prompt format.
#include "common/tokenizer/chat_template.h"

#include <doctest/doctest.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "tests/common/tokenizer/tokenizer_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

std::string fixture(const std::string& name) {
  std::ifstream in(dancemoe::testing::source_dir() / "tests/fixtures/chat_templates" / name,
                   std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<ChatTemplate> load(const std::string& name, std::optional<std::string> bos,
                                   std::optional<std::string> eos) {
  ChatTemplateConfig config;
  config.bos_token = std::move(bos);
  config.eos_token = std::move(eos);
  // 2025-08-05 12:00 UTC: the same date in every time zone but the farthest.
  config.clock = [] { return std::chrono::system_clock::from_time_t(1754395200); };
  Result<std::unique_ptr<ChatTemplate>> t =
      ChatTemplate::from_jinja({{"default", fixture(name)}}, config);
  REQUIRE_MESSAGE(t.is_ok(), t.status().message());
  return std::move(t).value();
}

std::string render_ok(const ChatTemplate& t, const ChatRequest& request) {
  Result<std::string> text = t.render(request);
  REQUIRE_MESSAGE(text.is_ok(), text.status().message());
  return *text;
}

Json message(const char* role, const char* content) {
  return Json{{"role", role}, {"content", content}};
}

// system + two user turns + one assistant turn, generation prompt on.
ChatRequest multi_turn() {
  ChatRequest r;
  r.messages = Json::array({message("system", "You are terse."), message("user", "Hi"),
                            message("assistant", "Hello."), message("user", "Weather?")});
  return r;
}

// The tool as Python's json.dumps writes it (what {{ tool | tojson }} prints).
constexpr std::string_view kWeatherTool =
    R"({"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city", )"
    R"("parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city"}}, )"
    R"("required": ["city"]}}})";

Json weather_tools() { return Json::array({Json::parse(kWeatherTool)}); }

Json weather_call(const Json& arguments) {
  return Json::array({Json{{"id", "call12345"},
                           {"type", "function"},
                           {"function", {{"name", "get_weather"}, {"arguments", arguments}}}}});
}

// user -> assistant tool call -> tool result, generation prompt on. The
// client sends OpenAI's shapes: content null, arguments as JSON text.
ChatRequest tool_round(bool with_system) {
  ChatRequest r;
  r.tools = weather_tools();
  if (with_system) r.messages.push_back(message("system", "Use tools."));
  r.messages.push_back(message("user", "Weather in Paris?"));
  r.messages.push_back(Json{{"role", "assistant"},
                            {"content", nullptr},
                            {"tool_calls", weather_call(R"({"city": "Paris"})")}});
  r.messages.push_back(
      Json{{"role", "tool"}, {"tool_call_id", "call12345"}, {"content", R"({"temp": 21})"}});
  return r;
}

TEST_CASE("chat template: Qwen3 is ChatML, with the generation prompt after the last user turn") {
  auto t = load("qwen3.jinja", std::nullopt, "<|im_end|>");
  CHECK(render_ok(*t, multi_turn()) ==
        "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWeather?<|im_end|>\n"
        "<|im_start|>assistant\n");
  ChatRequest no_prompt = multi_turn();
  no_prompt.add_generation_prompt = false;
  CHECK(render_ok(*t, no_prompt).ends_with("<|im_start|>user\nWeather?<|im_end|>\n"));
  CHECK(t->format_name() == "chatml");
  CHECK(t->tool_call_format() == ToolCallFormat::kHermes);
  CHECK(t->supports_tools());
}

TEST_CASE("chat template: Qwen3 enable_thinking=false closes an empty think block") {
  auto t = load("qwen3.jinja", std::nullopt, "<|im_end|>");
  ChatRequest r;
  r.messages = Json::array({message("user", "Hi")});
  r.kwargs = Json{{"enable_thinking", false}};
  CHECK(render_ok(*t, r) ==
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  r.kwargs = Json{{"enable_thinking", true}};
  CHECK(render_ok(*t, r) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("chat template: Qwen3 keeps the reasoning of the current turn and drops earlier turns'") {
  auto t = load("qwen3.jinja", std::nullopt, "<|im_end|>");
  ChatRequest current;
  current.add_generation_prompt = false;
  current.messages = Json::array(
      {message("user", "2+2?"),
       Json{{"role", "assistant"}, {"content", "4"}, {"reasoning_content", "Add two and two."}}});
  CHECK(render_ok(*t, current) ==
        "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nAdd two and "
        "two.\n</think>\n\n4<|im_end|>\n");
  ChatRequest history;
  history.messages =
      Json::array({message("user", "2+2?"), message("assistant", "<think>\nAdd.\n</think>\n\n4"),
                   message("user", "3+3?")});
  CHECK(render_ok(*t, history) ==
        "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\n3+"
        "3?<|im_end|>\n"
        "<|im_start|>assistant\n");
}

TEST_CASE(
    "chat template: Qwen3 lists the tools in the system turn and writes calls as <tool_call> "
    "JSON") {
  auto t = load("qwen3.jinja", std::nullopt, "<|im_end|>");
  CHECK(render_ok(*t, tool_round(true)) ==
        "<|im_start|>system\nUse tools.\n\n# Tools\n\nYou may call one or more functions to assist "
        "with the user "
        "query.\n\nYou are provided with function signatures within <tools></tools> XML "
        "tags:\n<tools>\n" +
            std::string(kWeatherTool) +
            "\n</tools>\n\nFor each function call, return a json object with function name and "
            "arguments within "
            "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
            "\"arguments\": "
            "<args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in "
            "Paris?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
            "{\"city\": "
            "\"Paris\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temp\": "
            "21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("chat template: Qwen2-MoE adds its default system prompt") {
  auto t = load("qwen2-moe.jinja", std::nullopt, "<|im_end|>");
  ChatRequest r;
  r.messages = Json::array({message("user", "Hi")});
  CHECK(
      render_ok(*t, r) ==
      "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
      "<|im_start|>assistant\n");
  CHECK(render_ok(*t, multi_turn()) ==
        "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nWeather?<|im_end|>\n"
        "<|im_start|>assistant\n");
  CHECK_FALSE(t->supports_tools());
  CHECK(t->tool_call_format() == ToolCallFormat::kNone);
}

TEST_CASE(
    "chat template: Mixtral [INST] turns, system prepended to the first, roles must alternate") {
  auto t = load("mixtral-8x7b-instruct.jinja", "<s>", "</s>");
  CHECK(render_ok(*t, multi_turn()) ==
        "<s> [INST] You are terse.\n\nHi [/INST] Hello.</s> [INST] Weather? [/INST]");
  CHECK(t->format_name() == "mistral_inst");
  ChatRequest bad;
  bad.messages = Json::array({message("user", "a"), message("user", "b")});
  Result<std::string> refused = t->render(bad);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("conversation roles must alternate") != std::string::npos);
  // The same text as the built-in format the node used before templates.
  const std::vector<ChatMessage> messages = {{"system", "You are terse."}, {"user", "Hi"}};
  CHECK(*t->render(messages, true) == *format_chat(ChatFormat::kMistralInst, messages, true));
}

TEST_CASE(
    "chat template: Mistral tool calls as [AVAILABLE_TOOLS], [TOOL_CALLS] and [TOOL_RESULTS]") {
  auto t = load("mistral-nemo-instruct-2407.jinja", "<s>", "</s>");
  ChatRequest r = tool_round(false);
  r.messages.push_back(message("assistant", "It is 21 C."));
  r.messages.push_back(message("user", "Thanks"));
  CHECK(render_ok(*t, r) ==
        "<s>[INST]Weather in Paris?[/INST][TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": "
        "{\"city\": "
        "\"Paris\"}, \"id\": \"call12345\"}]</s>[TOOL_RESULTS]{\"content\": {\"temp\": 21}, "
        "\"call_id\": "
        "\"call12345\"}[/TOOL_RESULTS]It is 21 C.</s>[AVAILABLE_TOOLS][{\"type\": \"function\", "
        "\"function\": "
        "{\"name\": \"get_weather\", \"description\": \"Get the weather in a city\", "
        "\"parameters\": {\"type\": "
        "\"object\", \"properties\": {\"city\": {\"type\": \"string\", \"description\": \"The "
        "city\"}}, "
        "\"required\": [\"city\"]}}}][/AVAILABLE_TOOLS][INST]Thanks[/INST]");
  CHECK(t->tool_call_format() == ToolCallFormat::kMistral);
  CHECK(t->supports_tools());
}

TEST_CASE("chat template: OLMoE's Tulu turns") {
  auto t = load("olmoe-1b-7b-0924-instruct.jinja", "<|endoftext|>", "<|endoftext|>");
  CHECK(
      render_ok(*t, multi_turn()) ==
      "<|endoftext|><|system|>\nYou are terse.\n<|user|>\nHi\n<|assistant|>\nHello.<|endoftext|>\n"
      "<|user|>\nWeather?\n<|assistant|>\n");
  CHECK(t->format_name() == "tulu");
}

TEST_CASE("chat template: DeepSeek-V2 User:/Assistant: turns") {
  auto t = load("deepseek-v2-lite-chat.jinja", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>");
  CHECK(render_ok(*t, multi_turn()) ==
        "<｜begin▁of▁sentence｜>You are terse.\n\nUser: Hi\n\nAssistant: "
        "Hello.<｜end▁of▁sentence｜>User: "
        "Weather?\n\nAssistant:");
  CHECK(t->format_name() == "deepseek_v2");
}

TEST_CASE("chat template: DeepSeek-V3.1 turns, thinking on or off, and its tool call tokens") {
  auto t = load("deepseek-v3.1.jinja", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>");
  CHECK(render_ok(*t, multi_turn()) ==
        "<｜begin▁of▁sentence｜>You are "
        "terse.<｜User｜>Hi<｜Assistant｜></think>Hello.<｜end▁of▁sentence｜>"
        "<｜User｜>Weather?<｜Assistant｜></think>");
  ChatRequest thinking;
  thinking.messages = Json::array({message("user", "Hi")});
  thinking.kwargs = Json{{"thinking", true}};
  CHECK(render_ok(*t, thinking) == "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜><think>");
  ChatRequest r = tool_round(true);
  r.messages.push_back(message("assistant", "It is 21 C."));
  r.messages.push_back(message("user", "Thanks"));
  CHECK(render_ok(*t, r) ==
        "<｜begin▁of▁sentence｜>Use tools.<｜User｜>Weather in "
        "Paris?<｜Assistant｜></think><｜tool▁calls▁begin｜>"
        "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": "
        "\"Paris\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        "<｜end▁of▁sentence｜><｜tool▁output▁begin｜>{\"temp\": 21}<｜tool▁output▁end｜>It is 21 "
        "C.<｜end▁of▁sentence｜><｜User｜>Thanks<｜Assistant｜></think>");
  CHECK(t->format_name() == "deepseek_v3");
  CHECK(t->tool_call_format() == ToolCallFormat::kDeepSeek);
  // Its tools go in the system prompt, written by the client: the template has none.
  CHECK_FALSE(t->supports_tools());
}

TEST_CASE("chat template: GLM-4.5 turns, /nothink, and <arg_key>/<arg_value> tool calls") {
  auto t = load("glm-4.5.jinja", std::nullopt, "<|endoftext|>");
  CHECK(render_ok(*t, multi_turn()) ==
        "[gMASK]<sop><|system|>\nYou are "
        "terse.<|user|>\nHi<|assistant|>\n<think></think>\nHello.<|user|>\n"
        "Weather?<|assistant|>");
  ChatRequest no_think;
  no_think.messages = Json::array({message("user", "Hi")});
  no_think.kwargs = Json{{"enable_thinking", false}};
  CHECK(render_ok(*t, no_think) ==
        "[gMASK]<sop><|user|>\nHi/nothink<|assistant|>\n<think></think>");
  ChatRequest r = tool_round(false);
  r.messages[1]["tool_calls"] = weather_call(R"({"city": "Paris", "days": 2})");
  CHECK(render_ok(*t, r) ==
        "[gMASK]<sop><|system|>\n# Tools\n\nYou may call one or more functions to assist with the "
        "user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
            std::string(kWeatherTool) +
            "\n</tools>\n\nFor each function call, output the function name and arguments within "
            "the following "
            "XML "
            "format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}</"
            "arg_key>\n<arg_value>{arg-value-1}"
            "</arg_value>\n<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</"
            "arg_value>\n...\n</tool_call>"
            "<|user|>\nWeather in "
            "Paris?<|assistant|>\n<think></think>\n<tool_call>get_weather\n<arg_key>city"
            "</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</"
            "arg_value>\n"
            "</tool_call><|observation|>\n<tool_response>\n{\"temp\": "
            "21}\n</tool_response><|assistant|>");
  CHECK(t->format_name() == "glm4");
  CHECK(t->tool_call_format() == ToolCallFormat::kGlm);
}

std::string local_date(std::time_t when) {
  std::tm tm{};
  localtime_r(&when, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string harmony_system(const std::string& effort, bool tools) {
  return "<|start|>system<|message|>You are ChatGPT, a large language model trained by "
         "OpenAI.\nKnowledge cutoff: "
         "2024-06\nCurrent date: " +
         local_date(1754395200) + "\n\nReasoning: " + effort +
         "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every "
         "message." +
         (tools ? "\nCalls to these tools must go to the commentary channel: 'functions'." : "") +
         "<|end|>";
}

TEST_CASE("chat template: gpt-oss harmony messages, reasoning effort, and function calls") {
  auto t = load("gpt-oss.jinja", "<|startoftext|>", "<|return|>");
  CHECK(render_ok(*t, multi_turn()) == harmony_system("medium", false) +
                                           "<|start|>developer<|message|># Instructions\n\nYou are "
                                           "terse.\n\n<|end|><|start|>user<|message|>Hi"
                                           "<|end|><|start|>assistant<|channel|>final<|message|>"
                                           "Hello.<|end|><|start|>user<|message|>Weather?"
                                           "<|end|><|start|>assistant");
  ChatRequest high;
  high.messages = Json::array({message("user", "Hi")});
  high.kwargs = Json{{"reasoning_effort", "high"}};
  CHECK(render_ok(*t, high) ==
        harmony_system("high", false) + "<|start|>user<|message|>Hi<|end|><|start|>assistant");
  CHECK(render_ok(*t, tool_round(false)) ==
        harmony_system("medium", true) +
            "<|start|>developer<|message|># Tools\n\n## functions\n\nnamespace functions {\n\n// "
            "Get the weather in "
            "a city\ntype get_weather = (_: {\n// The city\ncity: string,\n}) => any;\n\n} // "
            "namespace "
            "functions<|end|><|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant "
            "to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": "
            "\"Paris\"}<|call|>"
            "<|start|>functions.get_weather "
            "to=assistant<|channel|>commentary<|message|>\"{\\\"temp\\\": 21}\""
            "<|end|><|start|>assistant");
  CHECK(t->format_name() == "harmony");
  CHECK(t->tool_call_format() == ToolCallFormat::kHarmony);
  CHECK(t->supports_tools());
}

TEST_CASE(
    "chat template: gpt-oss shows reasoning (`thinking` or `reasoning_content`) only where it "
    "belongs") {
  auto t = load("gpt-oss.jinja", "<|startoftext|>", "<|return|>");
  ChatRequest r;
  r.add_generation_prompt = false;
  r.messages = Json::array(
      {message("user", "2+2?"),
       Json{{"role", "assistant"}, {"content", "4"}, {"reasoning_content", "Add them."}}});
  // The last assistant turn without a generation prompt (training): its analysis and <|return|>.
  CHECK(render_ok(*t, r).ends_with(
      "<|start|>user<|message|>2+2?<|end|><|start|>assistant<|channel|>analysis"
      "<|message|>Add them.<|end|><|start|>assistant<|channel|>final<|message|>4"
      "<|return|>"));
}

TEST_CASE("chat template: content parts are joined, other part types refused by message") {
  auto t = load("qwen3.jinja", std::nullopt, "<|im_end|>");
  ChatRequest r;
  r.messages =
      Json::array({Json{{"role", "user"},
                        {"content", Json::array({Json{{"type", "text"}, {"text", "Hel"}},
                                                 Json{{"type", "text"}, {"text", "lo"}}})}}});
  CHECK(render_ok(*t, r) == "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
  r.messages[0]["content"].push_back(Json{{"type", "image_url"}, {"image_url", "x"}});
  Result<std::string> refused = t->render(r);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("messages[0].content[2]") != std::string::npos);
  CHECK(refused.status().message().find("image_url") != std::string::npos);
}

TEST_CASE(
    "chat template: malformed requests and reserved kwargs are refused with the field named") {
  auto t = load("qwen3.jinja", std::nullopt, "<|im_end|>");
  ChatRequest r;
  r.messages = Json::array({Json{{"content", "no role"}}});
  CHECK(t->render(r).status().message().find("messages[0].role") != std::string::npos);
  r.messages = Json::array({message("user", "Hi")});
  r.kwargs = Json{{"messages", 1}};
  CHECK(t->render(r).status().message().find("'messages' is set by the server") !=
        std::string::npos);
  r.kwargs = Json::object();
  r.tools = "not a list";
  CHECK(t->render(r).status().message().find("tools") != std::string::npos);
  r.tools = nullptr;
  r.messages =
      Json::array({Json{{"role", "assistant"}, {"content", ""}, {"tool_calls", Json::array({1})}}});
  CHECK(t->render(r).status().message().find("messages[0].tool_calls[0]") != std::string::npos);
}

TEST_CASE("chat template: a request with tools uses the template named tool_use, as HF does") {
  Result<std::unique_ptr<ChatTemplate>> t = ChatTemplate::from_jinja(
      {{"default", "plain:{{ messages[0].content }}"}, {"tool_use", "tools:{{ tools | length }}"}});
  REQUIRE(t.is_ok());
  ChatRequest r;
  r.messages = Json::array({message("user", "Hi")});
  CHECK(*(*t)->render(r) == "plain:Hi");
  r.tools = weather_tools();
  CHECK(*(*t)->render(r) == "tools:1");
  Result<std::unique_ptr<ChatTemplate>> nameless =
      ChatTemplate::from_jinja({{"a", "x"}, {"b", "y"}});
  CHECK_FALSE(nameless.is_ok());
}

TEST_CASE("chat template: a template that does not parse names the template, line and column") {
  Result<std::unique_ptr<ChatTemplate>> t =
      ChatTemplate::from_jinja({{"default", "ok\n{% if x %}never closed"}});
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().message().find("chat template 'default'") != std::string::npos);
  CHECK(t.status().message().find("line 2, column 4: the 'if' tag is never closed") !=
        std::string::npos);
}

TEST_CASE("chat template: built-in formats serve models without a template, without tools") {
  auto chatml = ChatTemplate::from_builtin(ChatFormat::kChatML);
  ChatRequest r;
  r.messages = Json::array({message("user", "Hi")});
  CHECK(render_ok(*chatml, r) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  CHECK(chatml->is_builtin());
  CHECK(chatml->format_name() == "chatml");
  r.tools = weather_tools();
  CHECK(chatml->render(r).status().message().find("no tool calls") != std::string::npos);
}

TEST_CASE("chat template: for_tokenizer uses the model's template, else its built-in format") {
  Result<std::unique_ptr<ChatTemplate>> synthetic =
      ChatTemplate::for_tokenizer(testing::synthetic());
  REQUIRE(synthetic.is_ok());
  REQUIRE(*synthetic != nullptr);
  CHECK_FALSE((*synthetic)->is_builtin());
  CHECK((*synthetic)->format_name() == "chatml");
  // The synthetic template renders what the built-in ChatML format does.
  const std::vector<ChatMessage> messages = {{"system", "s"}, {"user", "u"}};
  CHECK(*(*synthetic)->render(messages, true) == *format_chat(ChatFormat::kChatML, messages, true));
  if (const Tokenizer* qwen = testing::qwen3()) {
    Result<std::unique_ptr<ChatTemplate>> t = ChatTemplate::for_tokenizer(*qwen);
    REQUIRE(t.is_ok());
    CHECK((*t)->tool_call_format() == ToolCallFormat::kHermes);
    CHECK(fixture("qwen3.jinja") == qwen->chat_template());
  }
  if (const Tokenizer* llama = testing::llama2()) {
    Result<std::unique_ptr<ChatTemplate>> t = ChatTemplate::for_tokenizer(*llama);
    REQUIRE(t.is_ok());
    CHECK(*t == nullptr);  // a base model: no chat
  }
}

}  // namespace
}  // namespace dancemoe::tokenizer
