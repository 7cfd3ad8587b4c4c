// Fuzz target for chat templates: a template source (a model file) and the
// messages rendered through it (a client's request) are both untrusted, so
// arbitrary bytes in either must give a rendering or an error with a
// message -- never a crash, a hang or unbounded memory (the limits below are
// small so that the budget is what stops runaway templates).
//
// The first input byte picks the mode (byte % 2):
//   0  the rest is a template source: parse, then render it over a fixed
//      conversation with tools
//   1  the rest is a JSON request body {"messages", "tools", "kwargs"}:
//      rendered through a fixed tool-using template
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/jinja/template.h"
#include "common/tokenizer/chat_template.h"

namespace {

using Json = nlohmann::ordered_json;

void require(bool condition) {
  if (!condition) std::abort();
}

dancemoe::jinja::RenderOptions small_limits() {
  dancemoe::jinja::RenderOptions options;
  options.limits.max_output_bytes = 1 << 16;
  options.limits.max_steps = 200000;
  options.limits.max_call_depth = 16;
  return options;
}

const Json& conversation() {
  static const Json vars = Json::parse(R"({
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
                 {"role": "assistant", "content": "", "tool_calls": [{"id": "call12345", "type": "function",
                  "function": {"name": "f", "arguments": {"a": [1, 2.5, "x"]}}}]},
                 {"role": "tool", "tool_call_id": "call12345", "content": "r"}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"a": {"type": "array"}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  return vars;
}

// A compact tool-using template in the style of the published ones.
constexpr const char* kTemplate = R"({%- set ns = namespace(last=-1) %}
{%- for m in messages %}{% if m.role == 'user' %}{% set ns.last = loop.index0 %}{% endif %}{% endfor %}
{%- if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>{% endif %}
{%- for m in messages %}
  {%- if m.role == 'assistant' and m.tool_calls %}
    {%- for tc in m.tool_calls %}{% set tc = tc.function %}<call>{{ tc.name }} {{ tc.arguments | tojson }}</call>{% endfor %}
  {%- else %}<{{ m.role }}>{{ m.content | trim }}{{ (m.reasoning_content or '')[:10] }}</{{ m.role }}>
  {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<assistant>{% if enable_thinking is false %}<think></think>{% endif %}{% endif %})";

const dancemoe::tokenizer::ChatTemplate& chat_template() {
  static const auto t = [] {
    dancemoe::tokenizer::ChatTemplateConfig config;
    config.limits = small_limits().limits;
    auto parsed = dancemoe::tokenizer::ChatTemplate::from_jinja({{"default", kTemplate}}, config);
    require(parsed.is_ok());
    return std::move(parsed).value();
  }();
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto t = dancemoe::jinja::Template::parse(rest);
    if (!t.is_ok()) {
      require(!t.status().message().empty());
      return 0;
    }
    auto out = t->render(conversation(), small_limits());
    require(out.is_ok() ? out->size() <= (1u << 16) : !out.status().message().empty());
    return 0;
  }
  Json body = Json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return 0;
  dancemoe::tokenizer::ChatRequest request;
  request.messages = body.value("messages", Json::array());
  request.tools = body.value("tools", Json());
  request.kwargs = body.value("kwargs", Json::object());
  auto out = chat_template().render(request);
  require(out.is_ok() || !out.status().message().empty());
  return 0;
}
