#include "scheduler/cli/node/node_chat_client.h"

#include <httplib.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/net/endpoint.h"

namespace dancemoe::cli {

using nlohmann::json;

void add_node_chat_flags(CLI::App& command, NodeChatOptions* o) {
  if (const char* key = std::getenv("DANCEMOE_API_KEY")) o->api_key = key;
  command.add_option("--node", o->node_url, "the node's HTTP API")->capture_default_str();
  command.add_option("--api-key", o->api_key, "bearer token (default: $DANCEMOE_API_KEY)");
  command.add_option("--max-tokens", o->max_tokens, "tokens to generate at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  command.add_option("--temperature", o->temperature, "sampling temperature (0: greedy)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 2.0));
  command.add_option("--seed", o->seed, "sampling seed (default: none)")
      ->check(CLI::NonNegativeNumber);
}

Result<StreamedAnswer> stream_answer(const NodeChatOptions& o, const std::vector<ChatTurn>& history,
                                     bool raw,
                                     const std::function<void(std::string_view)>& on_text) {
  json body = {{"max_tokens", o.max_tokens},
               {"temperature", o.temperature},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (o.seed >= 0) body["seed"] = o.seed;
  if (raw) {
    body["prompt"] = history.empty() ? "" : history.back().content;
  } else {
    json messages = json::array();
    for (const ChatTurn& t : history)
      messages.push_back({{"role", t.role}, {"content", t.content}});
    body["messages"] = messages;
  }
  DMOE_ASSIGN_OR_RETURN(const net::HostPort node, net::parse_http_address("--node", o.node_url));
  httplib::Client client(node.host, node.port);
  client.set_read_timeout(o.timeout_s, 0);
  client.set_connection_timeout(5, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = raw ? "/v1/completions" : "/v1/chat/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  if (!o.api_key.empty()) req.set_header("Authorization", "Bearer " + o.api_key);
  StreamedAnswer answer;
  std::string buffer;
  std::string stream_error;
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    buffer.append(data, len);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0 || event == "data: [DONE]") continue;
      const json j = json::parse(event.substr(6), nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("error")) {
        stream_error = j["error"].value("message", "error");
        continue;
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        answer.prompt_tokens = j["usage"].value("prompt_tokens", int64_t{0});
        answer.completion_tokens = j["usage"].value("completion_tokens", int64_t{0});
      }
      if (!j.contains("choices") || j["choices"].empty()) continue;
      const json& c = j["choices"][0];
      std::string piece;
      if (raw) {
        piece = c.value("text", "");
      } else if (c.contains("delta") && c["delta"].contains("content")) {
        piece = c["delta"]["content"].get<std::string>();
      }
      if (!piece.empty()) {
        answer.text += piece;
        on_text(piece);
      }
      if (c.contains("finish_reason") && c["finish_reason"].is_string()) {
        answer.finish_reason = c["finish_reason"].get<std::string>();
      }
    }
    return true;
  };
  const httplib::Result res = client.send(req);
  if (!res) {
    return unavailable(
        "cannot reach the node at http://" + node.text() + " (" + httplib::to_string(res.error()) +
        "); is dancemoe-node running there, with --http " + node.text() + "? (--node)");
  }
  if (res->status != 200) {
    // The receiver got the error body too.
    const json j = json::parse(buffer.empty() ? res->body : buffer, nullptr, false);
    std::string message = "HTTP " + std::to_string(res->status);
    if (j.is_object() && j.contains("error")) message += ": " + j["error"].value("message", "");
    return failed_precondition(message);
  }
  if (!stream_error.empty()) return unavailable("the node failed mid-answer: " + stream_error);
  return answer;
}

}  // namespace dancemoe::cli
