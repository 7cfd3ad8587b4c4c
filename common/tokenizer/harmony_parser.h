// The kHarmony output format of gpt-oss (tool_call_parser.h): a sequence of
// messages, each a header (`<|channel|>analysis`, `<|channel|>commentary
// to=functions.get_weather <|constrain|>json`, ...; after the first also
// `<|start|>assistant`) then `<|message|>` and a body ended by <|end|>,
// <|call|> or <|return|>. Bodies stream out as they arrive -- analysis as
// reasoning, final (or commentary without a recipient) as content -- except
// a call's, which is held until its end and then becomes a ToolCall.
//
// Text whose `<|message|>` does not start within kMaxHarmonyHeaderBytes (a
// model that does not speak harmony) is passed through as content, however
// it arrives in pieces.
// Not thread-safe: one per answer.
#pragma once

#include <memory>

#include "common/tokenizer/tool_call_parser.h"

namespace dancemoe::tokenizer {

inline constexpr size_t kMaxHarmonyHeaderBytes = 512;

std::unique_ptr<ToolCallParser::Impl> make_harmony_parser(const ToolCallParserOptions& options);

}  // namespace dancemoe::tokenizer
