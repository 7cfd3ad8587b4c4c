#include "common/tokenizer/tool_call_parser.h"

#include "common/tokenizer/harmony_parser.h"
#include "common/tokenizer/tool_call_formats.h"

namespace dancemoe::tokenizer {
namespace {

class PlainText final : public ToolCallParser::Impl {
 public:
  void feed(std::string_view piece, ModelOutput* out) override { out->content.append(piece); }
  void finish(ModelOutput*) override {}
};

bool contains_marker(std::string_view source, std::string_view marker) {
  return source.find(marker) != std::string_view::npos;
}

}  // namespace

std::string_view tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return "none";
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kDeepSeek:
      return "deepseek";
    case ToolCallFormat::kGlm:
      return "glm";
    case ToolCallFormat::kHarmony:
      return "harmony";
  }
  return "none";
}

ToolCallFormat detect_tool_call_format(std::string_view source) {
  // Most specific first: GLM and Hermes both use <tool_call>.
  if (contains_marker(source, "<|channel|>") && contains_marker(source, "<|message|>"))
    return ToolCallFormat::kHarmony;
  if (contains_marker(source, "tool▁call▁begin")) return ToolCallFormat::kDeepSeek;
  if (contains_marker(source, "<arg_key>")) return ToolCallFormat::kGlm;
  if (contains_marker(source, "[TOOL_CALLS]")) return ToolCallFormat::kMistral;
  if (contains_marker(source, "<tool_call>")) return ToolCallFormat::kHermes;
  return ToolCallFormat::kNone;
}

std::string forced_call_prefix(ToolCallFormat format, std::string_view function) {
  const std::string name(function);
  switch (format) {
    case ToolCallFormat::kNone:
      return "";
    case ToolCallFormat::kHermes:
      return name.empty()
                 ? "<tool_call>\n"
                 : "<tool_call>\n{\"name\": " + nlohmann::json(name).dump() + ", \"arguments\": ";
    case ToolCallFormat::kMistral:
      return name.empty()
                 ? "[TOOL_CALLS]"
                 : "[TOOL_CALLS][{\"name\": " + nlohmann::json(name).dump() + ", \"arguments\": ";
    case ToolCallFormat::kDeepSeek:
      return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>" +
             (name.empty() ? std::string() : name + "<｜tool▁sep｜>");
    case ToolCallFormat::kGlm:
      return "<tool_call>" + (name.empty() ? std::string() : name + "\n");
    case ToolCallFormat::kHarmony:
      return "<|channel|>commentary to=functions." +
             (name.empty() ? std::string() : name + " <|constrain|>json<|message|>");
  }
  return "";
}

ForcedCallBody forced_call_body(ToolCallFormat format, bool named) {
  switch (format) {
    case ToolCallFormat::kNone:
    case ToolCallFormat::kGlm:
      return ForcedCallBody::kNone;
    case ToolCallFormat::kHermes:
      return named ? ForcedCallBody::kArguments : ForcedCallBody::kCall;
    case ToolCallFormat::kMistral:
      return named ? ForcedCallBody::kArguments : ForcedCallBody::kCallList;
    case ToolCallFormat::kDeepSeek:
    case ToolCallFormat::kHarmony:
      return named ? ForcedCallBody::kArguments : ForcedCallBody::kNone;
  }
  return ForcedCallBody::kNone;
}

std::string forced_call_suffix(ToolCallFormat format, bool named) {
  if (forced_call_body(format, named) == ForcedCallBody::kNone) return "";
  switch (format) {
    case ToolCallFormat::kHermes:
      return named ? "}\n</tool_call>" : "\n</tool_call>";
    case ToolCallFormat::kMistral:
      return named ? "}]" : "";  // the list closes itself
    case ToolCallFormat::kDeepSeek:
      return "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    case ToolCallFormat::kHarmony:
      return "<|call|>";
    default:
      return "";
  }
}

ToolCallParser::ToolCallParser(ToolCallFormat format, ToolCallParserOptions options) {
  switch (format) {
    case ToolCallFormat::kNone:
      impl_ = std::make_unique<PlainText>();
      break;
    case ToolCallFormat::kHarmony:
      impl_ = make_harmony_parser(options);
      break;
    default:
      impl_ = make_marker_parser(format, options);
  }
}

ToolCallParser::~ToolCallParser() = default;

ModelOutput ToolCallParser::feed(std::string_view piece) {
  ModelOutput out;
  impl_->feed(piece, &out);
  return out;
}

ModelOutput ToolCallParser::finish() {
  ModelOutput out;
  impl_->finish(&out);
  return out;
}

ModelOutput parse_model_output(ToolCallFormat format, std::string_view text,
                               ToolCallParserOptions options) {
  ToolCallParser parser(format, std::move(options));
  ModelOutput out = parser.feed(text);
  ModelOutput rest = parser.finish();
  out.content += rest.content;
  out.reasoning += rest.reasoning;
  for (ToolCall& call : rest.tool_calls) out.tool_calls.push_back(std::move(call));
  return out;
}

}  // namespace dancemoe::tokenizer
