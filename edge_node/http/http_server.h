// HttpServer: the node's minimal HTTP API (cpp-httplib), enough for prompts
// and tests; the OpenAI-compatible API (issue 6) adds routes beside these.
//
//   GET  /health       200 {"status": "ok", ...} when the node can answer
//                      prompts; 503 {"status": "unavailable", "reason"} otherwise
//   GET  /v1/stats     the node's counters (activation counts since the
//                      committed placement, local-hit ratio, per-peer call
//                      statistics, expert service counters, migration state)
//   POST /v1/generate  generate_json.h; errors: 400 invalid request, 503 the
//                      cluster could not compute it (peers and offload cache
//                      failed), 500 otherwise -- always {"error": {"code", "message"}}
//
// Handlers run on httplib's thread pool and call the backend, which must be
// thread-safe. start() binds before returning, so the bound port is known
// (port 0 picks a free one).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>

#include "common/base/status.h"
#include "edge_node/agent/engine.h"

namespace httplib {
class Server;
}

namespace dancemoe::node {

class HttpBackend {
 public:
  virtual ~HttpBackend() = default;
  // (ready, reason when not)
  virtual std::pair<bool, std::string> health() = 0;
  virtual nlohmann::json stats() = 0;
  virtual Result<GenerateResponse> generate(const GenerateRequest& request) = 0;
};

class HttpServer {
 public:
  // `address`: "HOST:PORT" (port 0: any free port).
  static Result<std::unique_ptr<HttpServer>> start(const std::string& address,
                                                   HttpBackend& backend);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // "127.0.0.1:8080", with the port actually bound.
  const std::string& bound_address() const { return bound_address_; }
  void stop();

 private:
  HttpServer() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string bound_address_;
};

// HTTP status for a Status code: 400 for invalid_argument, 503 for
// unavailable / deadline_exceeded / resource_exhausted, 500 otherwise.
int http_status_for(StatusCode code);

}  // namespace dancemoe::node
