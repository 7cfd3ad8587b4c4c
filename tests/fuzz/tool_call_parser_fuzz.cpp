// Fuzz target for the tool call parsers: generated text is outside input
// (a model can write anything, and what it writes is steered by the
// client), so every format must take arbitrary bytes, in arbitrary pieces,
// without crashing, and lose nothing: when no call is found, the content is
// the text itself (for the marker formats).
//
// The first input byte picks the format (byte % 6) and the piece size
// (byte / 6 + 1); the rest is the generated text.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/tokenizer/tool_call_parser.h"

namespace {

using dancemoe::tokenizer::ModelOutput;
using dancemoe::tokenizer::ToolCallFormat;
using dancemoe::tokenizer::ToolCallParser;

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto format = static_cast<ToolCallFormat>(data[0] % 6);
  const size_t step = data[0] / 6 + 1;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  dancemoe::tokenizer::ToolCallParserOptions options;
  options.max_call_bytes = 4096;
  options.tools = nlohmann::ordered_json::parse(
      R"([{"type": "function", "function": {"name": "f", "parameters": {"properties": {"s": {"type": "string"}}}}}])");
  ToolCallParser parser(format, options);
  ModelOutput all;
  auto add = [&](ModelOutput d) {
    all.content += d.content;
    all.reasoning += d.reasoning;
    for (auto& call : d.tool_calls) {
      require(!call.name.empty());
      require(nlohmann::ordered_json::parse(call.arguments, nullptr, false).is_object());
      all.tool_calls.push_back(std::move(call));
    }
  };
  for (size_t i = 0; i < text.size(); i += step)
    add(parser.feed(std::string_view(text).substr(i, step)));
  add(parser.finish());
  const ModelOutput whole = dancemoe::tokenizer::parse_model_output(format, text, options);
  require(whole.tool_calls.size() == all.tool_calls.size());
  require(whole.content == all.content);
  // Without a call, nothing is lost (DeepSeek drops its section markers).
  const bool sections = text.find("tool▁calls") != std::string::npos;
  if (format != ToolCallFormat::kHarmony && all.tool_calls.empty() && !sections)
    require(all.content == text);
  return 0;
}
