// The tool-calling fields of a chat request and the tool calls of its
// answer, in OpenAI's shapes:
//
//   tools        list of {"type": "function", "function": {"name": [A-Za-z0-9_-]{1,64},
//                "description"?: string, "parameters"?: JSON schema object,
//                "strict"?: bool}}; at most kMaxTools
//   tool_choice  "none" | "auto" | "required" | {"type": "function",
//                "function": {"name": one of the tools}}; without tools only
//                "none" or "auto"
//   parallel_tool_calls  bool; false: the answer carries at most one call
//                (the first; the templates have no switch for it, so the
//                model may write more, and the rest are dropped)
//
// The tools are rendered by the model's own chat template
// (common/tokenizer/chat_template.h) and its answer is split by the parser
// of the template's family (common/tokenizer/tool_call_parser.h).
// "required" and a named function are honoured by starting the answer with
// the opening of a call (forced_call_prefix): the model writes the rest --
// under constrained decoding where that rest is one JSON value (the
// arguments, following the function's parameters schema), so that the call
// always parses (forced_tool_call).
//
// Answers: a message's "tool_calls" is [{"id": "call_...", "type":
// "function", "function": {"name", "arguments": JSON text}}] and its
// finish_reason "tool_calls"; a stream sends each call as one delta
// {"tool_calls": [{"index", "id", "type", "function": {"name",
// "arguments"}}]} when the call is complete. Pure functions; thread-safe.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "common/generation/grammar.h"
#include "common/tokenizer/tool_call_parser.h"
#include "edge_node/http/openai_errors.h"

namespace dancemoe::node {

inline constexpr size_t kMaxTools = 128;

enum class ToolChoiceMode { kAuto, kNone, kRequired, kFunction };

struct ToolsRequest {
  nlohmann::ordered_json tools;  // null, or the validated list, in the client's key order
  ToolChoiceMode choice = ToolChoiceMode::kAuto;
  std::string function;  // kFunction: the named function
  bool parallel = true;  // parallel_tool_calls; false: one call at most
  // Tools are rendered into the prompt and the answer is parsed for calls.
  bool active() const { return tools.is_array() && choice != ToolChoiceMode::kNone; }
};

// The tools, tool_choice and parallel_tool_calls members of a chat request
// body (a JSON object); a JSON null is an absent field. Errors name the field.
std::variant<ToolsRequest, ApiError> parse_tools_request(const nlohmann::ordered_json& body);

// How an answer that tool_choice forces to be a call is generated:
// `prefix` (forced_call_prefix) ends the prompt and is fed to the parser
// before the generated text. Where the format's next part is one JSON value
// (forced_call_body), `grammar` constrains it -- to the function's
// parameters (a named function), or to a call of one of the tools
// ("required") -- and `suffix` closes the call once the grammar is complete
// (the generation ended with "stop"). "required" with a single tool is that
// tool named.
struct ForcedToolCall {
  std::string prefix;
  std::shared_ptr<const Grammar> grammar;  // nullptr: the model writes the call freely
  std::string suffix;
};

// nullopt unless tool_choice is "required" or a function (and tools are
// active). A parameters schema that constrained decoding cannot follow
// (json_schema_grammar.h) leaves the call free, unless the tool says
// "strict": true: then an error naming tools[i].function.parameters.
std::variant<std::optional<ForcedToolCall>, ApiError> forced_tool_call(
    tokenizer::ToolCallFormat format, const ToolsRequest& request);

// "call_" and 24 random letters and digits, as OpenAI's ids look.
std::string new_tool_call_id();

// The message's "tool_calls": each call with the id the model wrote, else a
// new one.
nlohmann::json tool_calls_json(std::span<const tokenizer::ToolCall> calls);

// One streamed delta's "tool_calls": the calls numbered from `first_index`.
nlohmann::json tool_call_deltas_json(std::span<const tokenizer::ToolCall> calls,
                                     size_t first_index);

}  // namespace dancemoe::node
