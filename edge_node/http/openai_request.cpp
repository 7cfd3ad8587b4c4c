#include "edge_node/http/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "common/base/json_nesting.h"
#include "common/base/json_preview.h"
#include "edge_node/http/openai_fields.h"
#include "edge_node/http/response_format.h"

namespace dancemoe::node {
namespace {

using nlohmann::json;

constexpr size_t kMaxStops = 4;  // as OpenAI
constexpr size_t kMaxLogitBias = 1024;
// An object this large in a chat body or one that carries a schema is
// refused: such a body is re-read keeping key order (messages, tools and
// schemas go to the template and the grammar as sent), which costs the
// square of an object's size.
constexpr size_t kMaxKeysOrdered = 1024;

std::string shown(const json& value) { return json_preview(value); }

ApiError expected(const std::string& field, const std::string& what, const json& got) {
  return invalid_request(field, field + ": expected " + what + ", got " + shown(got),
                         got.is_number() ? "invalid_value" : "invalid_type");
}

std::optional<ApiError> check_text_content(const json& content, const std::string& at) {
  if (content.is_string()) return std::nullopt;
  if (content.is_array()) {
    for (const json& part : content) {
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
          !part["text"].is_string()) {
        return expected(at, "a string or a list of {\"type\": \"text\", \"text\"}", part);
      }
    }
    return std::nullopt;
  }
  return expected(at, "a string", content);
}

// An assistant message's tool_calls: what the client was answered before
// (OpenAI's shape; "index" is what a streamed answer carried).
std::optional<ApiError> check_tool_calls(const json& calls, const std::string& at) {
  if (!calls.is_array()) return expected(at, "a list of tool calls", calls);
  for (size_t k = 0; k < calls.size(); ++k) {
    const json& call = calls[k];
    const std::string call_at = at + "[" + std::to_string(k) + "]";
    if (!call.is_object()) {
      return expected(call_at, "an object {\"id\", \"type\": \"function\", \"function\"}", call);
    }
    for (const auto& [key, value] : call.items()) {
      if (key == "id") {
        if (!value.is_string()) return expected(call_at + ".id", "a string", value);
      } else if (key == "type") {
        if (value != "function") return expected(call_at + ".type", "\"function\"", value);
      } else if (key != "function" && key != "index") {
        return invalid_request(call_at + "." + key, call_at + ": unknown field '" + key + "'",
                               "unknown_parameter");
      }
    }
    const auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object()) {
      return expected(call_at + ".function", "an object {\"name\", \"arguments\"}",
                      fn == call.end() ? json(nullptr) : *fn);
    }
    const auto name = fn->find("name");
    if (name == fn->end() || !name->is_string()) {
      return expected(call_at + ".function.name", "a string",
                      name == fn->end() ? json(nullptr) : *name);
    }
    const auto args = fn->find("arguments");
    if (args != fn->end() && !args->is_string() && !args->is_object() && !args->is_null()) {
      return expected(call_at + ".function.arguments", "the arguments' JSON text", *args);
    }
  }
  return std::nullopt;
}

// The fields each role may carry besides role, content and name.
bool allowed_field(const std::string& role, const std::string& key) {
  if (key == "role" || key == "content" || key == "name") return true;
  if (role == "assistant") {
    return key == "tool_calls" || key == "reasoning_content" || key == "reasoning";
  }
  return role == "tool" && key == "tool_call_id";
}

// Checks the messages; the template gets them from the ordered body.
std::optional<ApiError> check_messages(const json& value) {
  if (!value.is_array() || value.empty()) {
    return expected("messages", "a non-empty list of {\"role\", \"content\"}", value);
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const json& m = value[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return expected(at, "an object {\"role\", \"content\"}", m);
    const auto role_field = m.find("role");
    if (role_field == m.end() || !role_field->is_string()) {
      return expected(at + ".role", "\"system\", \"user\", \"assistant\" or \"tool\"",
                      role_field == m.end() ? json(nullptr) : *role_field);
    }
    const std::string role = role_field->get<std::string>();
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" &&
        role != "tool") {
      return invalid_request(
          at + ".role",
          at + ".role: '" + role + "' is not supported (system, developer, user, assistant, tool)");
    }
    for (const auto& [key, field] : m.items()) {
      if (!allowed_field(role, key)) {
        return invalid_request(at + "." + key,
                               at + ": unknown field '" + key + "' (in a " + role + " message)",
                               "unknown_parameter");
      }
      if ((key == "name" || key == "tool_call_id" || key == "reasoning_content" ||
           key == "reasoning") &&
          !field.is_string() && !field.is_null()) {
        return expected(at + "." + key, "a string", field);
      }
    }
    const auto calls = m.find("tool_calls");
    const bool has_calls = calls != m.end() && !calls->is_null();
    if (has_calls) {
      if (auto e = check_tool_calls(*calls, at + ".tool_calls")) return e;
    }
    const auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      // OpenAI: an assistant message that calls tools needs no content.
      if (!(role == "assistant" && has_calls && !calls->empty())) {
        return invalid_request(at + ".content", at + ".content: missing", "missing_required");
      }
    } else if (auto e = check_text_content(*content, at + ".content")) {
      return e;
    }
    if (role == "tool") {
      const auto id = m.find("tool_call_id");
      if (id == m.end() || !id->is_string() || id->get<std::string>().empty()) {
        return invalid_request(at + ".tool_call_id",
                               at + ".tool_call_id: missing (the id of the tool call this "
                                    "message answers)",
                               "missing_required");
      }
    }
  }
  return std::nullopt;
}

std::optional<std::vector<int32_t>> token_list(const json& value) {
  if (!value.is_array() || value.empty()) return std::nullopt;
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (const json& id : value) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return std::nullopt;
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return ids;
}

std::optional<ApiError> parse_prompt(const json& value, OpenAiRequest* r) {
  const char* what =
      "a string, a list of strings, a list of token ids or a list of lists of token ids";
  if (value.is_string()) {
    r->prompts.push_back({value.get<std::string>(), std::nullopt});
    return std::nullopt;
  }
  if (!value.is_array() || value.empty()) return expected("prompt", what, value);
  if (value[0].is_number()) {
    std::optional<std::vector<int32_t>> ids = token_list(value);
    if (!ids) return expected("prompt", "token ids (integers >= 0)", value);
    r->prompts.push_back({"", std::move(ids)});
    return std::nullopt;
  }
  for (const json& one : value) {
    if (one.is_string()) {
      r->prompts.push_back({one.get<std::string>(), std::nullopt});
    } else if (std::optional<std::vector<int32_t>> ids = token_list(one)) {
      r->prompts.push_back({"", std::move(ids)});
    } else {
      return expected("prompt", what, value);
    }
  }
  return std::nullopt;
}

std::optional<ApiError> parse_logit_bias(const json& value, OpenAiRequest* r) {
  if (!value.is_object()) {
    return expected("logit_bias", "an object {\"token id\": bias in [-100, 100]}", value);
  }
  if (value.size() > kMaxLogitBias) {
    return invalid_request("logit_bias", "logit_bias: at most " + std::to_string(kMaxLogitBias) +
                                             " tokens, got " + std::to_string(value.size()));
  }
  for (const auto& [key, bias] : value.items()) {
    int64_t id = -1;
    if (!key.empty() && key.size() <= 10 &&
        key.find_first_not_of("0123456789") == std::string::npos) {
      id = std::stoll(key);
    }
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return invalid_request("logit_bias", "logit_bias: '" + key + "' is not a token id");
    }
    if (!bias.is_number() || !(std::fabs(bias.get<double>()) <= 100.0)) {
      return expected("logit_bias." + key, "a number in [-100, 100]", bias);
    }
    r->sampling.logit_bias.emplace_back(static_cast<int32_t>(id),
                                        static_cast<float>(bias.get<double>()));
  }
  return std::nullopt;
}

std::optional<ApiError> number_in(const std::string& key, const json& value, double lo, double hi,
                                  bool lo_open, float* out) {
  const std::string range =
      std::string(lo_open ? "(" : "[") + json(lo).dump() + ", " + json(hi).dump() + "]";
  if (!value.is_number()) return expected(key, "a number in " + range, value);
  const double v = value.get<double>();
  if (!(lo_open ? v > lo : v >= lo) || !(v <= hi))
    return expected(key, "a number in " + range, value);
  *out = static_cast<float>(v);
  return std::nullopt;
}

std::optional<ApiError> integer_in(const std::string& key, const json& value, int64_t lo,
                                   int64_t hi, int32_t* out) {
  if (!value.is_number_integer() || value.get<int64_t>() < lo || value.get<int64_t>() > hi) {
    return expected(key,
                    "an integer " + (hi == std::numeric_limits<int32_t>::max()
                                         ? ">= " + std::to_string(lo)
                                         : "in " + std::to_string(lo) + ".." + std::to_string(hi)),
                    value);
  }
  *out = static_cast<int32_t>(value.get<int64_t>());
  return std::nullopt;
}

struct Pending {
  std::optional<int32_t> max_completion_tokens;
  std::optional<bool> chat_logprobs;
  std::optional<int32_t> top_logprobs;
  std::optional<int32_t> best_of;
  std::string format_field;  // the field that asked for constrained output
  bool has_messages = false;
  bool has_tools = false;  // tools, tool_choice or parallel_tool_calls
  bool has_kwargs = false;
  std::string reasoning_effort;  // handed to the chat template (gpt-oss reads it)
};

std::optional<ApiError> parse_field(const std::string& key, const json& value, OpenAiKind kind,
                                    OpenAiRequest* r, Pending* pending) {
  const bool chat = kind == OpenAiKind::kChat;
  const int32_t kMaxInt = std::numeric_limits<int32_t>::max();
  if (key == "model") {
    if (!value.is_string()) return expected(key, "a string", value);
    r->model = value.get<std::string>();
  } else if (key == "prompt" && !chat) {
    return parse_prompt(value, r);
  } else if (key == "messages" && chat) {
    if (auto e = check_messages(value)) return e;
    pending->has_messages = true;  // taken from the ordered body
  } else if (key == "max_tokens") {
    int32_t v = 0;
    if (auto e = integer_in(key, value, 1, kMaxInt, &v)) return e;
    r->max_tokens = v;
  } else if (key == "max_completion_tokens") {
    int32_t v = 0;
    if (auto e = integer_in(key, value, 1, kMaxInt, &v)) return e;
    pending->max_completion_tokens = v;
  } else if (key == "temperature") {
    return number_in(key, value, 0.0, 2.0, false, &r->sampling.temperature);
  } else if (key == "top_p") {
    return number_in(key, value, 0.0, 1.0, true, &r->sampling.top_p);
  } else if (key == "min_p") {
    return number_in(key, value, 0.0, 1.0, false, &r->sampling.min_p);
  } else if (key == "top_k") {
    // vLLM's "off" is -1; ours is 0.
    if (value.is_number_integer() && value.get<int64_t>() == -1) return std::nullopt;
    return integer_in(key, value, 0, kMaxInt, &r->sampling.top_k);
  } else if (key == "presence_penalty") {
    return number_in(key, value, -2.0, 2.0, false, &r->sampling.presence_penalty);
  } else if (key == "frequency_penalty") {
    return number_in(key, value, -2.0, 2.0, false, &r->sampling.frequency_penalty);
  } else if (key == "repetition_penalty" || key == "repeat_penalty") {
    return number_in(key, value, 0.0, 10.0, true, &r->sampling.repetition_penalty);
  } else if (key == "logit_bias") {
    return parse_logit_bias(value, r);
  } else if (key == "seed") {
    // A negative seed used to wrap to a huge unsigned one: refused instead.
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0)) {
      return expected(key, "a non-negative integer", value);
    }
    r->sampling.seed = value.get<uint64_t>();
    r->seed_given = true;
  } else if (key == "stop") {
    std::vector<std::string> stops;
    if (value.is_string()) {
      stops.push_back(value.get<std::string>());
    } else if (value.is_array() && value.size() <= kMaxStops) {
      for (const json& s : value) {
        if (!s.is_string()) return expected(key, "a string or a list of up to 4 strings", value);
        stops.push_back(s.get<std::string>());
      }
    } else {
      return expected(key, "a string or a list of up to 4 strings", value);
    }
    for (const std::string& s : stops) {
      if (s.empty()) return invalid_request(key, "stop: empty stop strings are not allowed");
    }
    r->stop = std::move(stops);
  } else if (key == "n") {
    return integer_in(key, value, 1, kMaxChoices, &r->n);
  } else if (key == "best_of" && !chat) {
    int32_t v = 0;
    if (auto e = integer_in(key, value, 1, kMaxChoices, &v)) return e;
    pending->best_of = v;
  } else if (key == "logprobs") {
    if (chat) {
      if (!value.is_boolean()) return expected(key, "true or false", value);
      pending->chat_logprobs = value.get<bool>();
    } else if (value.is_boolean()) {
      r->n_logprobs = value.get<bool>() ? 0 : -1;
    } else {
      return integer_in(key, value, 0, kMaxTopLogprobs, &r->n_logprobs);
    }
  } else if (key == "top_logprobs" && chat) {
    int32_t v = 0;
    if (auto e = integer_in(key, value, 0, kMaxTopLogprobs, &v)) return e;
    pending->top_logprobs = v;
  } else if (key == "echo" && !chat) {
    if (!value.is_boolean()) return expected(key, "true or false", value);
    r->echo = value.get<bool>();
  } else if (key == "stream" || key == "ignore_eos") {
    if (!value.is_boolean()) return expected(key, "true or false", value);
    (key == "stream" ? r->stream : r->ignore_eos) = value.get<bool>();
  } else if (key == "stream_options") {
    if (!value.is_object()) {
      return expected(key, "an object {\"include_usage\": bool, \"include_stats\": bool}", value);
    }
    for (const auto& [k, v] : value.items()) {
      if ((k != "include_usage" && k != "include_stats") || !v.is_boolean()) {
        return expected("stream_options." + k, "include_usage or include_stats: true or false", v);
      }
      (k == "include_usage" ? r->include_usage : r->include_stats) = v.get<bool>();
    }
  } else if (key == "user") {
    if (!value.is_string()) return expected(key, "a string", value);
  } else if (key == "response_format" || key == "guided_json" || key == "json_schema") {
    if (!pending->format_field.empty()) {
      return invalid_request(
          key, key + " and " + pending->format_field + " both constrain the output: send one");
    }
    pending->format_field = key;  // parsed after the loop, keeping the schema's key order
  } else if (chat && (key == "tools" || key == "tool_choice" || key == "parallel_tool_calls")) {
    pending->has_tools = true;  // parsed from the ordered body: the tools' schemas keep their order
  } else if (chat && key == "reasoning_effort") {
    if (value.is_null()) return std::nullopt;
    const char* kEfforts[] = {"minimal", "low", "medium", "high"};
    if (!value.is_string() || std::find(std::begin(kEfforts), std::end(kEfforts),
                                        value.get<std::string>()) == std::end(kEfforts)) {
      return expected(key, "\"minimal\", \"low\", \"medium\" or \"high\"", value);
    }
    pending->reasoning_effort = value.get<std::string>();
  } else if (chat && key == "chat_template_kwargs") {
    if (!value.is_object()) return expected(key, "an object of chat template variables", value);
    for (const char* reserved :
         {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"}) {
      if (value.contains(reserved)) {
        return invalid_request(key + "." + reserved, key + "." + reserved +
                                                         ": set by the server (send it as a "
                                                         "request field, not a template variable)");
      }
    }
    pending->has_kwargs = true;
  } else if (is_ignored_field(key, kind)) {
    r->ignored.push_back(key);
  } else if (is_refused_field(key)) {
    return invalid_request(key,
                           key +
                               ": not supported by this node (ignoring it would change "
                               "the output you asked for)",
                           "unsupported_parameter");
  } else {
    return invalid_request(key, "unknown field '" + key + "'", "unknown_parameter");
  }
  return std::nullopt;
}

// The largest object anywhere in `value` (iterative: the value is shallow
// already, but this needs no recursion at all).
size_t largest_object(const json& value) {
  size_t largest = 0;
  std::vector<const json*> todo = {&value};
  while (!todo.empty()) {
    const json* v = todo.back();
    todo.pop_back();
    if (v->is_object()) largest = std::max(largest, v->size());
    if (v->is_structured()) {
      for (const json& child : *v) todo.push_back(&child);
    }
  }
  return largest;
}

}  // namespace

std::variant<OpenAiRequest, ApiError> parse_openai_request(std::string_view body, OpenAiKind kind) {
  if (Status deep = check_json_nesting(body, "the request body"); !deep.is_ok()) {
    return invalid_request("", deep.message(), "invalid_json");
  }
  const json root = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return invalid_request("", "the request body is not valid JSON", "invalid_json");
  }
  if (!root.is_object()) return expected("(body)", "a JSON object", root);
  OpenAiRequest r;
  r.kind = kind;
  r.sampling.temperature = 1.0f;  // OpenAI's default
  Pending pending;
  for (const auto& [key, value] : root.items()) {
    if (value.is_null()) continue;
    if (std::optional<ApiError> error = parse_field(key, value, kind, &r, &pending)) return *error;
  }
  if (kind == OpenAiKind::kCompletion && r.prompts.empty()) {
    return invalid_request("prompt", "prompt: missing (a string)", "missing_required");
  }
  if (kind == OpenAiKind::kChat && !pending.has_messages) {
    return invalid_request("messages", "messages: missing (a non-empty list)", "missing_required");
  }
  if (pending.max_completion_tokens) r.max_tokens = pending.max_completion_tokens;
  if (pending.top_logprobs && !pending.chat_logprobs.value_or(false)) {
    return invalid_request("top_logprobs", "top_logprobs needs \"logprobs\": true");
  }
  if (pending.chat_logprobs.value_or(false)) r.n_logprobs = pending.top_logprobs.value_or(0);
  if (pending.best_of) {
    if (*pending.best_of < r.n) {
      return invalid_request("best_of", "best_of (" + std::to_string(*pending.best_of) +
                                            ") must be at least n (" + std::to_string(r.n) + ")");
    }
    if (*pending.best_of > r.n) r.ignored.push_back("best_of");
  }
  std::sort(r.ignored.begin(), r.ignored.end());  // the warning names them in one order
  if (r.echo && r.n_logprobs >= 0) {
    return invalid_request("echo", "echo with logprobs is not supported (prompt logprobs)");
  }
  const size_t n_prompts = kind == OpenAiKind::kChat ? 1 : r.prompts.size();
  if (n_prompts * static_cast<size_t>(r.n) > static_cast<size_t>(kMaxChoices)) {
    return invalid_request(kind == OpenAiKind::kChat ? "n" : "prompt",
                           "at most " + std::to_string(kMaxChoices) +
                               " choices per request (prompts x n), got " +
                               std::to_string(n_prompts * static_cast<size_t>(r.n)));
  }
  if (!r.seed_given) {
    // A fresh seed per request: the same request without a seed gives
    // another answer each time (OpenAI's behaviour), a seed reproduces one.
    static thread_local std::mt19937_64 seeds{std::random_device{}()};
    r.sampling.seed = seeds();
  }
  if (pending.format_field.empty() && kind != OpenAiKind::kChat) return r;
  const std::string param = pending.format_field.empty() ? "messages" : pending.format_field;
  if (largest_object(root) > kMaxKeysOrdered) {
    return invalid_request(param, "a body with " + param + " may hold objects of at most " +
                                      std::to_string(kMaxKeysOrdered) + " keys");
  }
  // Again keeping each object's key order: properties are generated in it,
  // and the template renders messages and tools as sent.
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(body, nullptr, false);
  if (!pending.format_field.empty()) {
    std::variant<ResponseGrammar, ApiError> grammar =
        parse_response_format(pending.format_field, ordered.at(pending.format_field));
    if (ApiError* e = std::get_if<ApiError>(&grammar)) return *e;
    r.grammar = std::get<ResponseGrammar>(grammar);
  }
  if (kind != OpenAiKind::kChat) return r;
  r.messages = ordered.at("messages");
  for (nlohmann::ordered_json& m : r.messages) {
    if (m["role"] == "developer") m["role"] = "system";  // OpenAI's newer name
  }
  if (pending.has_tools) {
    std::variant<ToolsRequest, ApiError> tools = parse_tools_request(ordered);
    if (ApiError* e = std::get_if<ApiError>(&tools)) return *e;
    r.tools = std::move(std::get<ToolsRequest>(tools));
  }
  if (pending.has_kwargs) r.chat_template_kwargs = ordered.at("chat_template_kwargs");
  // The template variable of the same name (gpt-oss's harmony system
  // message says it); chat_template_kwargs, being explicit, wins.
  if (!pending.reasoning_effort.empty() && !r.chat_template_kwargs.contains("reasoning_effort")) {
    r.chat_template_kwargs["reasoning_effort"] = pending.reasoning_effort;
  }
  return r;
}

}  // namespace dancemoe::node
