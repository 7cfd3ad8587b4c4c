#include "edge_node/http/chat_answer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

namespace dancemoe::node {
namespace {

// A forced call's body longer than this is not kept to be checked: such a
// call is given up as content anyway (ToolCallParserOptions::max_call_bytes).
constexpr size_t kMaxForcedBody = size_t{1} << 20;

void append(tokenizer::ModelOutput&& from, tokenizer::ModelOutput* to) {
  to->content += from.content;
  to->reasoning += from.reasoning;
  for (tokenizer::ToolCall& call : from.tool_calls) to->tool_calls.push_back(std::move(call));
}

}  // namespace

ChatAnswer::ChatAnswer(ChatAnswerOptions options) : options_(std::move(options)) {
  if (options_.reasoning) splitter_.emplace(*options_.reasoning);
  if (options_.parse) {
    tokenizer::ToolCallParserOptions parser_options;
    parser_options.tools = options_.tools;
    parser_ = std::make_unique<tokenizer::ToolCallParser>(options_.format, parser_options);
    if (!options_.forced_prefix.empty()) pending_ = parser_->feed(options_.forced_prefix);
  }
}

ChatAnswer::~ChatAnswer() = default;

void ChatAnswer::to_parser(std::string_view content, tokenizer::ModelOutput* out) {
  if (!parser_) {
    out->content.append(content);
  } else if (!content.empty()) {
    if (!options_.forced_suffix.empty() && forced_body_kept_) {
      forced_body_kept_ = forced_body_.size() + content.size() <= kMaxForcedBody;
      if (forced_body_kept_) {
        forced_body_.append(content);
      } else {
        forced_body_.clear();
      }
    }
    append(parser_->feed(content), out);
  }
}

tokenizer::ModelOutput ChatAnswer::limit_calls(tokenizer::ModelOutput out) {
  if (options_.max_tool_calls > 0) {
    const size_t room = options_.max_tool_calls - std::min(calls_, options_.max_tool_calls);
    if (out.tool_calls.size() > room) out.tool_calls.resize(room);
  }
  calls_ += out.tool_calls.size();
  return out;
}

tokenizer::ModelOutput ChatAnswer::feed(std::string_view text) {
  tokenizer::ModelOutput out = std::exchange(pending_, {});
  if (splitter_) {
    ReasoningSplitter::Delta d = splitter_->feed(text);
    out.reasoning += d.reasoning;
    to_parser(d.content, &out);
  } else {
    to_parser(text, &out);
  }
  return limit_calls(std::move(out));
}

tokenizer::ModelOutput ChatAnswer::finish(bool stopped) {
  tokenizer::ModelOutput out = std::exchange(pending_, {});
  if (splitter_) {
    ReasoningSplitter::Delta d = splitter_->finish();
    out.reasoning += d.reasoning;
    to_parser(d.content, &out);
  }
  if (parser_) {
    // The grammar ends the generation ("stop") once the JSON is whole; a
    // stop string may end it earlier, leaving a partial value.
    if (stopped && !options_.forced_suffix.empty() && forced_body_kept_ &&
        nlohmann::json::accept(forced_body_)) {
      forced_body_kept_ = false;
      to_parser(options_.forced_suffix, &out);
    }
    append(parser_->finish(), &out);
  }
  return limit_calls(std::move(out));
}

}  // namespace dancemoe::node
