#include "edge_node/http/http_server.h"

#include <httplib.h>

#include "edge_node/http/generate_json.h"

namespace dancemoe::node {
namespace {

using nlohmann::json;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void send_error(httplib::Response& res, const Status& status) {
  send_json(
      res, http_status_for(status.code()),
      {{"error",
        {{"code", std::string(status_code_name(status.code()))}, {"message", status.message()}}}});
}

}  // namespace

int http_status_for(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      return 400;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kResourceExhausted:
      return 503;
    default:
      return 500;
  }
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& address,
                                                      HttpBackend& backend) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return invalid_argument("--http: expected HOST:PORT (e.g. 127.0.0.1:8080), got '" + address +
                            "'");
  }
  const std::string host = address.substr(0, colon);
  int port = 0;
  try {
    size_t used = 0;
    port = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1 || port < 0 || port > 65535) throw std::out_of_range("");
  } catch (const std::exception&) {
    return invalid_argument("--http: the port of '" + address + "' is not a number in 0..65535");
  }
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& server = *s->server_;

  server.Get("/health", [&backend](const httplib::Request&, httplib::Response& res) {
    auto [ready, reason] = backend.health();
    if (ready) {
      send_json(res, 200, {{"status", "ok"}});
    } else {
      send_json(res, 503, {{"status", "unavailable"}, {"reason", reason}});
    }
  });
  server.Get("/v1/stats", [&backend](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, backend.stats());
  });
  server.Post("/v1/generate", [&backend](const httplib::Request& req, httplib::Response& res) {
    Result<GenerateRequest> request = parse_generate_request(req.body);
    if (!request.is_ok()) {
      send_error(res, request.status());
      return;
    }
    Result<GenerateResponse> response = backend.generate(*request);
    if (!response.is_ok()) {
      send_error(res, response.status());
      return;
    }
    send_json(res, 200, generate_response_json(*response));
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

  const int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) return unavailable("--http: cannot bind " + address);
  s->bound_address_ = host + ":" + std::to_string(bound);
  s->thread_ = std::thread([raw = s->server_.get()] { raw->listen_after_bind(); });
  return s;
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace dancemoe::node
