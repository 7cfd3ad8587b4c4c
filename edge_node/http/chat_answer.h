// ChatAnswer: one generated chat answer split into what an OpenAI client
// sees -- content, reasoning_content and tool_calls -- as it streams in.
//
//   1. A model that thinks aloud between markers (Qwen3's <think>): the
//      ReasoningSplitter takes the thinking out first (reasoning_splitter.h).
//   2. With tools, and always for gpt-oss (harmony: every answer is made of
//      channels), the rest goes through the parser of the template's family
//      (common/tokenizer/tool_call_parser.h); harmony's "analysis" channel is
//      the reasoning. Such answers are generated keeping special tokens
//      (keeps_special_tokens): harmony's and Mistral's markers are special.
//   3. A forced call (openai_tools.h ForcedToolCall): its prefix, which ended
//      the prompt, is fed to the parser first, and its suffix once the
//      generation ended with "stop" and what it wrote is one whole JSON value
//      (the grammar completed it). A stop string that cut the JSON short is
//      a "stop" too: then, as when max_tokens cut it, no call is made and
//      the text -- prefix and partial JSON, no closing the model never
//      wrote -- is the content.
// Without any of these the content is the generated text as it is.
//
// Not thread-safe: one per generated choice.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/tokenizer/tool_call_parser.h"
#include "edge_node/http/reasoning_splitter.h"

namespace dancemoe::node {

struct ChatAnswerOptions {
  std::optional<ReasoningMarkers> reasoning;  // think-aloud markers (not with harmony)
  bool parse = false;                         // run the ToolCallParser
  tokenizer::ToolCallFormat format = tokenizer::ToolCallFormat::kNone;
  nlohmann::ordered_json tools;  // the request's tools (kGlm reads parameter types)
  std::string forced_prefix;     // a forced call's opening (fed first)
  std::string forced_suffix;     // what closes it after a complete grammar
  size_t max_tool_calls = 0;     // 0: any number; parallel_tool_calls false: 1
  // Whether the answer has a reasoning_content field at all.
  bool reports_reasoning() const {
    return reasoning.has_value() || (parse && format == tokenizer::ToolCallFormat::kHarmony);
  }
  // Whether the text must be decoded with its special tokens.
  bool keeps_special_tokens() const { return parse; }
};

class ChatAnswer {
 public:
  explicit ChatAnswer(ChatAnswerOptions options);
  ~ChatAnswer();
  ChatAnswer(const ChatAnswer&) = delete;
  ChatAnswer& operator=(const ChatAnswer&) = delete;

  // What `text` decided (held-back text comes later).
  tokenizer::ModelOutput feed(std::string_view text);
  // The rest; `stopped`: the generation ended with "stop" (not "length").
  tokenizer::ModelOutput finish(bool stopped);

 private:
  void to_parser(std::string_view content, tokenizer::ModelOutput* out);
  // Drops the calls past max_tool_calls.
  tokenizer::ModelOutput limit_calls(tokenizer::ModelOutput out);

  ChatAnswerOptions options_;
  std::optional<ReasoningSplitter> splitter_;
  std::unique_ptr<tokenizer::ToolCallParser> parser_;
  tokenizer::ModelOutput pending_;  // what the forced prefix decided
  // What the model wrote after a forced prefix, while it is kept: until the
  // suffix is fed, or dropped past a bound (then no call can complete).
  std::string forced_body_;
  bool forced_body_kept_ = true;
  size_t calls_ = 0;  // tool calls answered so far
};

}  // namespace dancemoe::node
