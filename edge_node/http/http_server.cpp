#include "edge_node/http/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>

#include "common/http/bearer_token.h"
#include "common/http/http_listener.h"
#include "common/http/http_reply.h"
#include "common/http/static_assets.h"
#include "edge_node/http/chat_page.h"
#include "edge_node/http/connection_probe.h"
#include "edge_node/http/generate_json.h"
#include "edge_node/http/http_context.h"
#include "edge_node/http/prompt_tokens.h"

namespace dancemoe::node {

bool ServedModel::answers_to(const std::string& wanted) const {
  return wanted == name || wanted == model_id ||
         std::find(aliases.begin(), aliases.end(), wanted) != aliases.end();
}
namespace {

using nlohmann::json;

constexpr size_t kMaxBodyBytes = 16u << 20;

void send_error(httplib::Response& res, const Status& status) {
  http::send_status_error(res, status);
}

// POST /v1/generate: the node's own API, queued and cancellable like the OpenAI routes.
void handle_generate(HttpContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const HttpClock::time_point start = HttpClock::now();
  Result<GenerateRequest> request = parse_generate_request(req.body);
  if (!request.is_ok()) {
    send_error(res, request.status());
    return;
  }
  const ServedModel model = ctx.backend.served_model();
  if (!request->prompt_tokens && model.has_tokenizer) {
    // Refused before the whole text is tokenized when it cannot fit.
    const size_t limit = static_cast<size_t>(std::max<int64_t>(model.context_tokens - 1, 0));
    Result<PromptTokens> tokens =
        tokenize_within(request->prompt, limit,
                        [&](const std::string& text) { return ctx.backend.tokenize(text, true); });
    if (!tokens.is_ok()) {
      send_error(res, tokens.status());
      return;
    }
    if (!tokens->complete) {
      send_error(res,
                 invalid_argument("prompt: at least " + std::to_string(tokens->at_least) +
                                  " tokens, more than the context of " +
                                  std::to_string(model.context_tokens) + " tokens (--context)"));
      return;
    }
    request->prompt_tokens = std::move(tokens->ids);
  }
  Result<std::unique_ptr<RequestQueue::Ticket>> ticket = ctx.queue.enqueue();
  if (!ticket.is_ok()) {
    send_error(res, ticket.status());
    return;
  }
  ConnectionProbe probe(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  auto gone = [&ctx, &probe] { return ctx.stopping.load() || probe.closed(); };
  if (!(*ticket)->wait_turn(gone).is_ok()) {
    ctx.metrics.record_cancelled(Endpoint::kGenerate);
    res.status = 499;  // client closed the request (nginx's convention); nobody reads it
    return;
  }
  bool first = true;
  request->cancelled = gone;
  if (!request->return_logits) {
    request->on_text = [&](const TextDelta&) {
      if (first) ctx.metrics.observe_first_token(Endpoint::kGenerate, seconds_since(start));
      first = false;
      return true;
    };
  }
  Result<GenerateResponse> response = ctx.backend.generate(*request);
  ticket->reset();
  if (!response.is_ok()) {
    send_error(res, response.status());
    return;
  }
  if (response->finish_reason == "cancelled") {
    ctx.metrics.record_cancelled(Endpoint::kGenerate);
    res.status = 499;
    return;
  }
  ctx.metrics.add_tokens(Endpoint::kGenerate, static_cast<uint64_t>(response->prompt_tokens),
                         response->tokens.size());
  send_json(res, 200, generate_response_json(*response));
  ctx.metrics.observe_latency(Endpoint::kGenerate, seconds_since(start));
}

void register_node_routes(httplib::Server& server, HttpContext& ctx) {
  server.Get("/health", [&ctx](const httplib::Request&, httplib::Response& res) {
    auto [ready, reason] = ctx.backend.health();
    if (ready) {
      send_json(res, 200, {{"status", "ok"}, {"model", ctx.backend.served_model().name}});
    } else {
      send_json(res, 503, {{"status", "unavailable"}, {"reason", reason}});
    }
  });
  server.Get("/metrics", [&ctx](const httplib::Request&, httplib::Response& res) {
    http::PrometheusWriter out;
    ctx.metrics.write(out, ctx.queue.n_waiting(), ctx.queue.running(), ctx.queue.n_rejected());
    if (ctx.gate != nullptr) {
      out.family("dancemoe_http_connections_refused_total", "counter",
                 "Requests the HTTP front refused before any handler saw them, by reason");
      const http::GateCounters& g = *ctx.gate;
      out.sample("dancemoe_http_connections_refused_total", {{"reason", "header_too_large"}},
                 static_cast<double>(g.head_too_large.load()));
      out.sample("dancemoe_http_connections_refused_total", {{"reason", "timeout"}},
                 static_cast<double>(g.timed_out.load()));
      out.sample("dancemoe_http_connections_refused_total", {{"reason", "malformed"}},
                 static_cast<double>(g.malformed.load()));
      out.sample("dancemoe_http_connections_refused_total", {{"reason", "body_too_large"}},
                 static_cast<double>(g.body_too_large.load()));
      out.sample("dancemoe_http_connections_refused_total", {{"reason", "over_capacity"}},
                 static_cast<double>(g.over_capacity.load()));
    }
    ctx.backend.write_metrics(out);
    res.status = 200;
    res.set_content(out.text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  server.Get("/v1/stats", [&ctx](const httplib::Request&, httplib::Response& res) {
    json stats = ctx.backend.stats();
    const ServedModel model = ctx.backend.served_model();
    stats["model"] = {
        {"name", model.name},
        {"id", model.model_id},
        {"context_tokens", model.context_tokens},
        {"has_tokenizer", model.has_tokenizer},
        {"chat_format", model.chat_template ? json(std::string(model.chat_template->format_name()))
                                            : json(nullptr)}};
    stats["http_queue"] = {{"waiting", ctx.queue.n_waiting()},
                           {"running", ctx.queue.running()},
                           {"rejected", ctx.queue.n_rejected()},
                           {"n_running", ctx.queue.n_running()},
                           {"max_queued", ctx.queue.max_waiting()}};
    send_json(res, 200, stats);
  });
  server.Post("/v1/generate", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_generate(ctx, req, res);
  });
  http::serve_static_assets(server, chat_page_assets());
}

}  // namespace

void send_api_error(httplib::Response& res, const ApiError& error) {
  send_json(res, error.http_status, api_error_json(error));
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerOptions& options,
                                                      HttpBackend& backend) {
  http::HttpListenerOptions listen;
  listen.address = options.address;
  listen.flag = "--http";
  // max_queued + max_running + 16 threads, so queued requests never starve /health.
  listen.n_threads =
      std::min<size_t>(options.max_queued, 1000) + std::min<size_t>(options.max_running, 256) + 16;
  listen.max_body_bytes = kMaxBodyBytes;
  std::unique_ptr<HttpServer> s(new HttpServer());
  DMOE_ASSIGN_OR_RETURN(s->listener_, http::HttpListener::bind(listen));
  if (!s->listener_->loopback() && options.api_key.empty()) {
    spdlog::warn(
        "--http {} is reachable from other machines and no --api-key (or DANCEMOE_API_KEY) is "
        "set: anyone who can reach this port can use the node",
        options.address);
  }
  s->context_ = std::make_unique<HttpContext>(backend, options);
  httplib::Server& server = s->listener_->server();
  HttpContext& ctx = *s->context_;

  if (!options.api_key.empty()) {
    server.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
      const bool api =
          req.path.rfind("/v1/", 0) == 0 || req.path == "/tokenize" || req.path == "/detokenize";
      if (!api) return httplib::Server::HandlerResponse::Unhandled;
      if (http::constant_time_equal(http::bearer_token(req), ctx.options.api_key)) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      ApiError e;
      e.http_status = 401;
      e.type = "authentication_error";
      e.code = "invalid_api_key";
      e.message =
          "missing or wrong API key: send the node's --api-key as \"Authorization: Bearer KEY\"";
      send_api_error(res, e);
      return httplib::Server::HandlerResponse::Handled;
    });
  }
  ctx.gate = &s->listener_->gate_counters();
  register_node_routes(server, ctx);
  register_openai_routes(server, ctx);
  register_token_routes(server, ctx);
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.status == 499) return;
    ApiError e;
    e.http_status = res.status;
    e.type = res.status >= 500 ? "server_error" : "invalid_request_error";
    e.code = res.status == 404 ? "not_found" : "http_" + std::to_string(res.status);
    e.message = res.status == 404 ? "no route " + req.method + " " + req.path
                                  : "HTTP " + std::to_string(res.status) + " for " + req.path;
    if (res.status == 413) {
      // A form body (curl -d without a Content-Type) has a far lower limit
      // than JSON: say so, since the request itself looks fine.
      const std::string type = req.get_header_value("Content-Type");
      e.message = type.rfind("application/x-www-form-urlencoded", 0) == 0
                      ? "the body was sent as a form (Content-Type: " + type +
                            "), whose limit is 8192 bytes: send JSON with \"Content-Type: "
                            "application/json\" (curl -H 'Content-Type: application/json')"
                      : "the body is larger than the node's limit of " +
                            std::to_string(kMaxBodyBytes) + " bytes";
    }
    send_api_error(res, e);
  });
  server.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    ctx.metrics.record_request(endpoint_of_path(req.path), res.status);
  });
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_error(res, internal_error(what));
      });

  s->bound_address_ = s->listener_->bound_address();
  s->listener_->start();
  return s;
}

HttpServer::~HttpServer() { stop(); }

size_t HttpServer::n_queued() const { return context_ ? context_->queue.n_waiting() : 0; }

void HttpServer::stop() {
  if (context_) context_->stopping = true;
  if (listener_) listener_->stop();
}

}  // namespace dancemoe::node
