// Fuzz target: any bytes as an OpenAI request body -- completions or chat,
// with messages, tools, tool_choice and chat_template_kwargs -- must parse
// or be refused with a named error, never crash, hang or take unbounded
// memory; a forced tool call's grammar is built for every tool call format.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "edge_node/http/openai_request.h"
#include "edge_node/http/openai_tools.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dancemoe::node::OpenAiKind;
  using dancemoe::node::OpenAiRequest;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (OpenAiKind kind : {OpenAiKind::kCompletion, OpenAiKind::kChat}) {
    auto parsed = dancemoe::node::parse_openai_request(body, kind);
    if (auto* e = std::get_if<dancemoe::node::ApiError>(&parsed)) {
      if (e->message.empty()) __builtin_trap();
      continue;
    }
    const OpenAiRequest& r = std::get<OpenAiRequest>(parsed);
    if (kind != OpenAiKind::kChat || !r.tools.active()) continue;
    using dancemoe::tokenizer::ToolCallFormat;
    for (ToolCallFormat format :
         {ToolCallFormat::kHermes, ToolCallFormat::kMistral, ToolCallFormat::kDeepSeek,
          ToolCallFormat::kGlm, ToolCallFormat::kHarmony}) {
      auto forced = dancemoe::node::forced_tool_call(format, r.tools);
      if (auto* e = std::get_if<dancemoe::node::ApiError>(&forced)) {
        if (e->message.empty()) __builtin_trap();
      }
    }
  }
  return 0;
}
