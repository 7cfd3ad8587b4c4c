// HttpContext: what the HTTP routes share -- the backend, the request queue
// in front of the generation engine, the HTTP metrics and the options.
// Owned by HttpServer; outlives every handler (the server is stopped and
// joined before it is destroyed). Thread-safe members only.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "common/http/connection_gate.h"
#include "common/http/http_reply.h"
#include "edge_node/http/http_metrics.h"
#include "edge_node/http/http_server.h"
#include "edge_node/http/openai_errors.h"
#include "edge_node/http/request_queue.h"

namespace httplib {
class Server;
struct Response;
}  // namespace httplib

namespace dancemoe::node {

struct HttpContext {
  HttpContext(HttpBackend& b, const HttpServerOptions& o)
      : backend(b), options(o), queue(o.max_queued, o.max_running) {}

  HttpBackend& backend;
  HttpServerOptions options;
  RequestQueue queue;
  HttpMetrics metrics;
  // Set by HttpServer::stop(): queued and running generations end early
  // so that shutdown does not wait for the whole queue.
  std::atomic<bool> stopping{false};
  // What the listener's gate turned away (431, 408, ...): for /metrics.
  const http::GateCounters* gate = nullptr;
};

using HttpClock = std::chrono::steady_clock;

inline double seconds_since(HttpClock::time_point start) {
  return std::chrono::duration<double>(HttpClock::now() - start).count();
}

using http::send_json;
void send_api_error(httplib::Response& res, const ApiError& error);

// POST /v1/completions, POST /v1/chat/completions, GET /v1/models[/ID].
void register_openai_routes(httplib::Server& server, HttpContext& context);
// POST /tokenize, POST /detokenize (llama-server's).
void register_token_routes(httplib::Server& server, HttpContext& context);

}  // namespace dancemoe::node
