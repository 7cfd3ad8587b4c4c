#include "edge_node/http/openai_request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace dancemoe::node {
namespace {

using nlohmann::json;

constexpr size_t kMaxStops = 4;  // as OpenAI

std::string shown(const json& value) {
  std::string s = value.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

ApiError expected(const std::string& field, const std::string& what, const json& got) {
  return invalid_request(field, field + ": expected " + what + ", got " + shown(got),
                         got.is_number() ? "invalid_value" : "invalid_type");
}

std::optional<ApiError> parse_messages(const json& value, OpenAiRequest* r) {
  if (!value.is_array() || value.empty()) {
    return expected("messages", "a non-empty list of {\"role\", \"content\"}", value);
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const json& m = value[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return expected(at, "an object {\"role\", \"content\"}", m);
    tokenizer::ChatMessage message;
    const auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      return expected(at + ".role", "\"system\", \"user\" or \"assistant\"",
                      role == m.end() ? json(nullptr) : *role);
    }
    message.role = role->get<std::string>();
    if (message.role == "developer") message.role = "system";  // OpenAI's newer name
    if (message.role != "system" && message.role != "user" && message.role != "assistant") {
      return invalid_request(at + ".role",
                             at + ".role: '" + message.role +
                                 "' is not supported (system, developer, user, assistant)");
    }
    const auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      return invalid_request(at + ".content", at + ".content: missing", "missing_required");
    }
    if (content->is_string()) {
      message.content = content->get<std::string>();
    } else if (content->is_array()) {
      for (const json& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
          return expected(at + ".content", "a string or a list of {\"type\": \"text\", \"text\"}",
                          part);
        }
        message.content += part["text"].get<std::string>();
      }
    } else {
      return expected(at + ".content", "a string", *content);
    }
    for (const auto& [key, unused] : m.items()) {
      if (key != "role" && key != "content" && key != "name") {
        return invalid_request(at + "." + key, at + ": unknown field '" + key + "'",
                               "unknown_parameter");
      }
    }
    r->messages.push_back(std::move(message));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_field(const std::string& key, const json& value, OpenAiKind kind,
                                    OpenAiRequest* r) {
  if (key == "model") {
    if (!value.is_string()) return expected(key, "a string", value);
    r->model = value.get<std::string>();
  } else if (key == "prompt" && kind == OpenAiKind::kCompletion) {
    if (value.is_string()) {
      r->prompt = value.get<std::string>();
    } else if (value.is_array() && value.size() == 1 && value[0].is_string()) {
      r->prompt = value[0].get<std::string>();
    } else {
      return expected(key, "a string (one prompt per request)", value);
    }
  } else if (key == "messages" && kind == OpenAiKind::kChat) {
    return parse_messages(value, r);
  } else if (key == "max_tokens" || (key == "max_completion_tokens" && kind == OpenAiKind::kChat)) {
    if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
        value.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return expected(key, "an integer >= 1", value);
    }
    r->max_tokens = static_cast<int32_t>(value.get<int64_t>());
  } else if (key == "temperature") {
    if (!value.is_number()) return expected(key, "a number in [0, 2]", value);
    const double t = value.get<double>();
    if (!(t >= 0.0 && t <= 2.0)) return expected(key, "a number in [0, 2]", value);
    r->sampling.temperature = static_cast<float>(t);
  } else if (key == "top_p") {
    if (!value.is_number()) return expected(key, "a number in (0, 1]", value);
    const double p = value.get<double>();
    if (!(p > 0.0 && p <= 1.0)) return expected(key, "a number in (0, 1]", value);
    r->sampling.top_p = static_cast<float>(p);
  } else if (key == "top_k") {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return expected(key, "an integer >= 0", value);
    }
    r->sampling.top_k = static_cast<int32_t>(value.get<int64_t>());
  } else if (key == "seed") {
    // A negative seed used to wrap to a huge unsigned one: refused instead.
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<int64_t>() >= 0)) {
      return expected(key, "a non-negative integer", value);
    }
    r->sampling.seed = value.get<uint64_t>();
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
  } else if (key == "n" || key == "best_of") {
    if (!value.is_number_integer()) return expected(key, "an integer (only 1 is supported)", value);
    if (value.get<int64_t>() != 1) {
      return invalid_request(
          key, key + ": only 1 is supported (one sequence per request), got " + shown(value));
    }
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
  } else if (key == "presence_penalty" || key == "frequency_penalty") {
    if (!value.is_number() || value.get<double>() != 0.0) {
      return expected(key, "0 (penalties are not supported)", value);
    }
  } else if (key == "logprobs" || key == "echo") {
    if (!value.is_boolean() || value.get<bool>()) {
      return expected(key, "false (not supported)", value);
    }
  } else {
    return invalid_request(key, "unknown field '" + key + "'", "unknown_parameter");
  }
  return std::nullopt;
}

}  // namespace

std::variant<OpenAiRequest, ApiError> parse_openai_request(std::string_view body, OpenAiKind kind) {
  const json root = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return invalid_request("", "the request body is not valid JSON", "invalid_json");
  }
  if (!root.is_object()) return expected("(body)", "a JSON object", root);
  OpenAiRequest r;
  r.kind = kind;
  r.sampling.temperature = 1.0f;  // OpenAI's default
  for (const auto& [key, value] : root.items()) {
    if (value.is_null()) continue;
    if (std::optional<ApiError> error = parse_field(key, value, kind, &r)) return *error;
  }
  if (kind == OpenAiKind::kCompletion && (!root.contains("prompt") || root["prompt"].is_null())) {
    return invalid_request("prompt", "prompt: missing (a string)", "missing_required");
  }
  if (kind == OpenAiKind::kChat && r.messages.empty()) {
    return invalid_request("messages", "messages: missing (a non-empty list)", "missing_required");
  }
  return r;
}

}  // namespace dancemoe::node
