// HttpServer: the node's HTTP API (cpp-httplib), default 127.0.0.1:8080.
//
//   GET  /                    the chat page (chat_page.h; static, public: it
//                             holds no data and asks for the API key when
//                             /v1 needs one)
//   GET  /health              200 {"status": "ok", "model"} when prompts can be
//                             answered (model loaded; standalone, or attached
//                             with a committed placement -- kept while the
//                             scheduler is away, DESIGN.md §8); else 503
//                             {"status": "unavailable", "reason"}
//   GET  /metrics             Prometheus text (http_metrics.h + the backend's)
//   GET  /v1/stats            the node's counters as JSON, and "model": {"name",
//                             "id", "context_tokens", "has_tokenizer",
//                             "chat_format": the chat template's short name
//                             ("chatml", "mistral_inst", "harmony", ...;
//                             tokenizer/chat_template.h) or null}
//   POST /v1/generate         generate_json.h (the node's own minimal API);
//                             errors {"error": {"code", "message"}}
//   GET  /v1/models[/ID]      OpenAI model list / one model
//   POST /v1/completions      OpenAI-compatible (openai_routes.cpp), streamed
//   POST /v1/chat/completions as server-sent events with "stream": true
//   POST /tokenize            llama-server's: {"content", "add_special",
//                             "with_pieces"} -> {"tokens"} (token_routes.cpp)
//   POST /detokenize          {"tokens"} -> {"content"}
//
// Generation requests (the last three and /v1/generate) go through one FIFO
// RequestQueue: up to max_running run together on the engine (--max-batch;
// continuous batching), at most --max-queued wait, more get 429. A client that disconnects cancels
// its generation (while queued or running). With an API key set, /v1/*, /tokenize and /detokenize
// need "Authorization: Bearer KEY" (401 otherwise); /health and /metrics
// stay open.
//
// Requests are read whole by the listener's gate (common/http/
// connection_gate.h: header limits and deadlines, so slow clients hold no
// thread); handlers run on a pool of max_queued + max_running + 16 threads, so queued
// requests never starve /health, and call the backend, which must be
// thread-safe. start() binds before returning, so the bound port is known
// (port 0 picks a free one).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/base/status.h"
#include "common/http/prometheus_text.h"
#include "common/tokenizer/chat_template.h"
#include "edge_node/agent/prompt_runner.h"
#include "edge_node/http/reasoning_splitter.h"

namespace dancemoe::http {
class HttpListener;
}

namespace dancemoe::node {

// The model a node serves, as the OpenAI API names it.
struct ServedModel {
  std::string name;                  // --served-model-name, else the model directory's name
  std::vector<std::string> aliases;  // more names clients may send (the directory's name too)
  std::string model_id;              // the model identity hash; accepted as a name too
  int64_t created_unix = 0;
  int64_t context_tokens = 0;
  int32_t vocab_size = 0;  // token ids are in [0, vocab_size)
  bool has_tokenizer = false;
  std::shared_ptr<const tokenizer::ChatTemplate> chat_template;  // null: no chat (base model)
  // Set for models that think aloud between these markers: chat answers
  // carry the thinking as `reasoning_content` (reasoning_splitter.h).
  std::optional<ReasoningMarkers> reasoning;

  // True when a request's "model" names this model.
  bool answers_to(const std::string& wanted) const;
};

class HttpBackend {
 public:
  virtual ~HttpBackend() = default;
  // (ready, reason when not)
  virtual std::pair<bool, std::string> health() = 0;
  virtual nlohmann::json stats() = 0;
  virtual Result<GenerateResponse> generate(const GenerateRequest& request) = 0;
  virtual ServedModel served_model() = 0;
  // invalid_argument when there is no tokenizer.
  virtual Result<std::vector<int32_t>> tokenize(const std::string& text,
                                                bool add_special_tokens) = 0;
  // The text of ids (special tokens shown unless skipped); invalid_argument
  // when there is no tokenizer. Ids outside the vocabulary are skipped.
  virtual Result<std::string> detokenize(std::span<const int32_t> ids, bool skip_special) = 0;
  // The raw bytes one token adds to a text (may end inside a UTF-8
  // character; empty for special tokens): logprobs' "bytes".
  virtual std::string token_bytes(int32_t id) = 0;
  // The node's own metric families (activations, peers, experts, migrations).
  virtual void write_metrics(http::PrometheusWriter& out) = 0;
};

struct HttpServerOptions {
  std::string address = "127.0.0.1:8080";  // HOST:PORT, port 0: any free port
  std::string api_key;                     // empty: no authentication
  size_t max_queued = 64;                  // generation requests waiting beyond the running ones
  size_t max_running = 1;                  // generation requests running together
};

struct HttpContext;

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> start(const HttpServerOptions& options,
                                                   HttpBackend& backend);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "127.0.0.1:8080", with the port actually bound.
  const std::string& bound_address() const { return bound_address_; }
  // Generation requests waiting in the queue (not running).
  size_t n_queued() const;
  void stop();

 private:
  HttpServer() = default;

  std::unique_ptr<HttpContext> context_;
  std::unique_ptr<http::HttpListener> listener_;
  std::string bound_address_;
};

}  // namespace dancemoe::node
