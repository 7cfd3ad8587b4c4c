#include "edge_node/http/openai_response.h"

#include <atomic>
#include <cstdio>
#include <random>

namespace dancemoe::node {

using nlohmann::json;

std::string new_response_id(OpenAiKind kind) {
  // A per-process random prefix and a counter: unique without a lock.
  static const uint64_t prefix = std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  static std::atomic<uint64_t> counter{0};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%016llx%08llx", static_cast<unsigned long long>(prefix),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return (kind == OpenAiKind::kChat ? "chatcmpl-" : "cmpl-") + std::string(buf);
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

namespace {

json head(const ResponseHeader& h, bool chunk) {
  const char* object = h.kind == OpenAiKind::kChat
                           ? (chunk ? "chat.completion.chunk" : "chat.completion")
                           : "text_completion";
  return {{"id", h.id}, {"object", object}, {"created", h.created_unix}, {"model", h.model}};
}

json reason(const std::string& finish_reason) {
  return finish_reason.empty() ? json(nullptr) : json(finish_reason);
}

}  // namespace

json completion_json(const ResponseHeader& h, const std::vector<Choice>& choices,
                     const Usage& usage) {
  json out = head(h, false);
  out["choices"] = json::array();
  for (const Choice& c : choices) {
    json choice = {
        {"index", c.index}, {"logprobs", c.logprobs}, {"finish_reason", reason(c.finish_reason)}};
    if (h.kind == OpenAiKind::kChat) {
      choice["message"] = {
          {"role", "assistant"},
          {"content", c.text.empty() && c.null_empty_content ? json(nullptr) : json(c.text)}};
      if (c.reasoning) choice["message"]["reasoning_content"] = *c.reasoning;
      if (!c.tool_calls.is_null()) choice["message"]["tool_calls"] = c.tool_calls;
    } else {
      choice["text"] = c.text;
    }
    out["choices"].push_back(std::move(choice));
  }
  out["usage"] = usage_json(usage);
  return out;
}

json chunk_json(const ResponseHeader& h, const Choice& c, bool first) {
  json out = head(h, true);
  json choice = {
      {"index", c.index}, {"logprobs", c.logprobs}, {"finish_reason", reason(c.finish_reason)}};
  if (h.kind == OpenAiKind::kChat) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (c.reasoning && !c.reasoning->empty()) delta["reasoning_content"] = *c.reasoning;
    if (!c.text.empty() || first) delta["content"] = c.text;
    if (!c.tool_calls.is_null()) delta["tool_calls"] = c.tool_calls;
    choice["delta"] = delta;
  } else {
    choice["text"] = c.text;
  }
  out["choices"] = json::array({choice});
  return out;
}

json usage_chunk_json(const ResponseHeader& h, const Usage& usage) {
  json out = head(h, true);
  out["choices"] = json::array();
  out["usage"] = usage_json(usage);
  return out;
}

json stats_chunk_json(const ResponseHeader& h, const json& stats) {
  json out = head(h, true);
  out["choices"] = json::array();
  out["dancemoe"] = stats;
  return out;
}

json models_json(const std::vector<std::string>& names, int64_t created_unix) {
  json data = json::array();
  for (const std::string& name : names) {
    data.push_back(
        {{"id", name}, {"object", "model"}, {"created", created_unix}, {"owned_by", "dancemoe"}});
  }
  return {{"object", "list"}, {"data", data}};
}

}  // namespace dancemoe::node
