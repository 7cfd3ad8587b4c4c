// ToolCallParser: a chat model's generated text split into what the client
// sees as the answer (`content`), the model's reasoning where the format
// carries it as a channel of its own (gpt-oss), and OpenAI-style tool calls
// (`tool_calls`: a function name and its arguments as JSON text). Each model
// family writes tool calls its own way; the format comes from the model's
// chat template (detect_tool_call_format) or ChatTemplate::tool_call_format():
//
//   kHermes    Qwen2.5/Qwen3 (and Hermes-style templates):
//              <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   kMistral   [TOOL_CALLS] [{"name": "f", "arguments": {...}, "id": "abc123XYZ"}]
//              (also the newer [TOOL_CALLS]f[ARGS]{...}); no end marker: the
//              JSON closes the call
//   kDeepSeek  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{...}
//              <｜tool▁call▁end｜><｜tool▁calls▁end｜> (V3.1), and V3/R1's
//              <｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{...}\n```
//              <｜tool▁call▁end｜>
//   kGlm       GLM-4.5: <tool_call>f\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>
//              ...</tool_call>; a value is JSON unless the tool's schema says
//              the parameter is a string (the template writes strings raw)
//   kHarmony   gpt-oss: messages <|channel|>NAME [to=RECIPIENT] [<|constrain|>json]
//              <|message|>BODY<|end|> | <|call|> | <|return|>, each after
//              <|start|>assistant but the first; channel "analysis" is
//              reasoning, "final" (and commentary without a recipient) is
//              content, a recipient "functions.f" makes a call of f
//   kNone      plain text: everything is content
//
// Streaming: feed() the generated text piece by piece (any split, even inside
// a marker or a multi-byte character); each call returns what became
// decided -- content and reasoning text so far, and the tool calls that
// completed -- holding back text that may still turn into a marker. finish()
// at the end of generation flushes the rest: an unterminated call whose body
// parses is still a call (a model may stop at EOS right after the JSON);
// otherwise, and for any call whose body does not parse, the raw text
// (markers included) becomes content, so nothing generated is lost.
// Whitespace right before and between tool calls is dropped; an answer with
// no tool call keeps its text exactly (the concatenated content equals the
// input for kNone, and for any answer without a marker).
//
// Feed text decoded with special tokens kept (skip_special_tokens = false):
// the markers of kMistral and kHarmony are special tokens. A call body longer
// than max_call_bytes is given up as content (bounded memory).
//
// Not thread-safe: one parser per generated answer.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace dancemoe::tokenizer {

enum class ToolCallFormat { kNone, kHermes, kMistral, kDeepSeek, kGlm, kHarmony };

// "none", "hermes", "mistral", "deepseek", "glm", "harmony".
std::string_view tool_call_format_name(ToolCallFormat format);
// The format a chat template's model writes tool calls in, from the markers
// its source mentions; kNone when it mentions none.
ToolCallFormat detect_tool_call_format(std::string_view template_source);

struct ToolCall {
  std::string id;         // the id the model wrote (kMistral), else empty: assign one
  std::string name;       // function name (kHarmony: the recipient without "functions.")
  std::string arguments;  // JSON text of the arguments (an object), as OpenAI's function.arguments
};

struct ToolCallParserOptions {
  // The request's tools (OpenAI definitions, or null): kGlm reads the
  // parameter types from them.
  nlohmann::ordered_json tools;
  size_t max_call_bytes = size_t{1} << 20;
};

struct ModelOutput {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format, ToolCallParserOptions options = {});
  ~ToolCallParser();
  ToolCallParser(const ToolCallParser&) = delete;
  ToolCallParser& operator=(const ToolCallParser&) = delete;

  // What `piece` decided (it may be empty while text is held back).
  ModelOutput feed(std::string_view piece);
  // The rest, at the end of generation. The parser is then spent.
  ModelOutput finish();

  // The interface of one format's parser (tool_call_formats.h, harmony_parser.h).
  class Impl {
   public:
    virtual ~Impl() = default;
    virtual void feed(std::string_view piece, ModelOutput* out) = 0;
    virtual void finish(ModelOutput* out) = 0;
  };

 private:
  std::unique_ptr<Impl> impl_;
};

// What to append to the prompt (after the generation prompt) so that the
// answer is a tool call: the opening of a call in `format`, with the
// function's name when `function` is not empty (tool_choice naming one),
// else only the marker (tool_choice "required"). The model writes the rest.
// The prefix is part of the answer: feed it to the parser before the
// generated text. Empty for kNone. `function` is written as given (the
// caller checks it is a plain name).
std::string forced_call_prefix(ToolCallFormat format, std::string_view function);

// What the model writes after forced_call_prefix when that part of the call
// is one JSON value, so that constrained decoding can guarantee it parses:
//   kArguments  the arguments object (a named function; every format but kGlm,
//               whose arguments are key/value tags)
//   kCall       {"name": ..., "arguments": {...}} (kHermes, "required")
//   kCallList   [{"name": ..., "arguments": {...}}, ...] (kMistral, "required")
//   kNone       not one JSON value (kGlm; "required" in kDeepSeek, kHarmony:
//               the name comes first, outside the JSON)
enum class ForcedCallBody { kNone, kArguments, kCall, kCallList };
ForcedCallBody forced_call_body(ToolCallFormat format, bool named);
// What closes a forced call once its JSON body (forced_call_body) is
// complete: prefix + body + suffix is one whole call in `format`.
std::string forced_call_suffix(ToolCallFormat format, bool named);

// The whole answer at once (feed + finish).
ModelOutput parse_model_output(ToolCallFormat format, std::string_view text,
                               ToolCallParserOptions options = {});

}  // namespace dancemoe::tokenizer
