// The tool call formats whose calls sit between markers in the text --
// kHermes, kMistral, kDeepSeek and kGlm (tool_call_parser.h describes each)
// -- as ToolCallParser::Impl: one streaming engine that looks for the
// markers, holding back any tail that may be the start of one, and a body
// parser per format that turns the text of one call into ToolCalls.
//
// JSON in a call body is parsed only after a nesting check (at most
// kMaxToolJsonDepth levels), since nlohmann's parser recurses once per level.
// Not thread-safe: one per answer.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "common/tokenizer/tool_call_parser.h"

namespace dancemoe::tokenizer {

inline constexpr int kMaxToolJsonDepth = 64;

// `text` (trimmed) as JSON, or nullopt when it is not JSON or nests deeper
// than kMaxToolJsonDepth.
std::optional<nlohmann::ordered_json> parse_tool_json(std::string_view text);

// format is kHermes, kMistral, kDeepSeek or kGlm.
std::unique_ptr<ToolCallParser::Impl> make_marker_parser(ToolCallFormat format,
                                                         const ToolCallParserOptions& options);

}  // namespace dancemoe::tokenizer
