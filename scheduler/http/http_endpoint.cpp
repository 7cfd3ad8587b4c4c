#include "scheduler/http/http_endpoint.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <map>
#include <mutex>
#include <utility>

#include "common/base/json_nesting.h"
#include "common/http/http_reply.h"
#include "common/http/prometheus_text.h"
#include "scheduler/daemon/service.h"
#include "scheduler/http/dashboard_assets.h"
#include "scheduler/http/http_access.h"
#include "scheduler/http/scheduler_metrics.h"
#include "scheduler/http/series_json.h"
#include "scheduler/store/series.h"

namespace dancemoe::scheduler {

using nlohmann::json;
using nlohmann::ordered_json;
using SteadyClock = std::chrono::steady_clock;

struct EndpointContext {
  EndpointContext(const HttpEndpointOptions& o, const HttpEndpointParts& p)
      : options(o), parts(p), access(o.keys, o.insecure_token) {}

  HttpEndpointOptions options;
  HttpEndpointParts parts;
  HttpAccess access;
  SystemClock system_clock;
  const Clock* clock = parts.clock ? parts.clock : &system_clock;

  // The read-only connection, opened on first use (the store creates the
  // file first) and reopened after a failure; the heat cache.
  std::mutex reader_mutex;
  std::unique_ptr<store::SeriesReader> reader;  // guarded by reader_mutex
  struct Heat {
    int64_t since_ms = -1;
    SteadyClock::time_point computed;
    ordered_json body;
  } heat;  // guarded by reader_mutex

  std::mutex requests_mutex;
  std::map<std::pair<std::string, int>, uint64_t> requests;  // (route, status)
};

namespace {

// The routes /metrics counts by name; anything else is "static" (a page
// file) or "other", so the label set stays bounded.
constexpr const char* kRoutes[] = {
    "/health",         "/metrics",       "/api/status", "/api/nodes", "/api/placement",
    "/api/migrations", "/api/decisions", "/api/series", "/api/heat",  "/api/round"};

std::string route_label(const std::string& path) {
  for (const char* r : kRoutes) {
    if (path == r) return r;
  }
  if (path == "/" || http::find_asset(dashboard_assets(), path) != nullptr) return "static";
  return "other";
}

void send_error(httplib::Response& res, const Status& status) {
  http::send_status_error(res, status);
  if (status.code() == StatusCode::kNotFound) res.status = 404;
}

// ?name=INTEGER within [min, max]; `fallback` when absent.
Result<int64_t> int_param(const httplib::Request& req, const char* name, int64_t fallback,
                          int64_t min, int64_t max) {
  if (!req.has_param(name)) return fallback;
  const std::string text = req.get_param_value(name);
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v >= min && v <= max) return static_cast<int64_t>(v);
  } catch (const std::exception&) {
  }
  return invalid_argument(std::string("?") + name + "=" + text.substr(0, 40) +
                          ": expected an integer in " + std::to_string(min) + ".." +
                          std::to_string(max));
}

Result<ordered_json> ask_loop(EndpointContext& ctx, const std::string& what, json args) {
  return ctx.parts.inbox->call(
      [what, args = std::move(args)](SchedulerService& service) {
        return service.read_only_query(what, args);
      },
      ctx.options.loop_timeout);
}

void answer(httplib::Response& res, const Result<ordered_json>& r) {
  if (r.is_ok()) {
    http::send_ordered_json(res, 200, *r);
  } else {
    send_error(res, r.status());
  }
}

// Runs `f` on the SeriesReader, opening it first when needed.
template <typename F>
auto with_reader(EndpointContext& ctx, F f) -> decltype(f(std::declval<store::SeriesReader&>())) {
  std::lock_guard<std::mutex> lock(ctx.reader_mutex);
  if (!ctx.reader) {
    auto opened = store::SeriesReader::open(ctx.options.db_path);
    if (!opened.is_ok()) return opened.status();
    ctx.reader = std::move(*opened);
  }
  auto result = f(*ctx.reader);
  if (!result.is_ok() && result.status().code() == StatusCode::kUnavailable) ctx.reader.reset();
  return result;
}

Result<ordered_json> series(EndpointContext& ctx, const httplib::Request& req) {
  DMOE_ASSIGN_OR_RETURN(const int64_t window_s, int_param(req, "window_s", 3600, 10, 30 * 86400));
  DMOE_ASSIGN_OR_RETURN(const int64_t points, int_param(req, "points", 120, 1, 1000));
  const int64_t now = ctx.clock->wall_ms();
  const store::SeriesRange range =
      series_range(now, static_cast<double>(window_s), static_cast<int32_t>(points));
  return with_reader(ctx, [&](store::SeriesReader& reader) -> Result<ordered_json> {
    DMOE_ASSIGN_OR_RETURN(const store::ClusterSeries s, reader.series(range));
    return series_json(s, now);
  });
}

Result<ordered_json> heat(EndpointContext& ctx, const httplib::Request& req) {
  DMOE_ASSIGN_OR_RETURN(const int64_t asked, int_param(req, "since_ms", -1, 0, INT64_MAX));
  return with_reader(ctx, [&](store::SeriesReader& reader) -> Result<ordered_json> {
    std::optional<uint64_t> version;
    int64_t since = asked;
    if (since < 0) {
      DMOE_ASSIGN_OR_RETURN(const auto committed, reader.committed());
      since = committed ? committed->committed_ms : 0;
      if (committed) version = committed->version;
    }
    EndpointContext::Heat& cache = ctx.heat;
    const auto now = SteadyClock::now();
    if (cache.since_ms == since && now - cache.computed < ctx.options.heat_ttl) return cache.body;
    DMOE_ASSIGN_OR_RETURN(const auto counts, reader.heat(since, ctx.parts.model->index));
    cache.body = heat_json(counts, *ctx.parts.model, since, version);
    cache.since_ms = since;
    cache.computed = now;
    return cache.body;
  });
}

void write_metrics(EndpointContext& ctx, httplib::Response& res) {
  Result<ordered_json> status = ask_loop(ctx, "status", json::object());
  if (!status.is_ok()) {
    send_error(res, status.status());
    return;
  }
  http::PrometheusWriter out;
  write_scheduler_metrics(out, *status);
  if (ctx.parts.loop_metrics) ctx.parts.loop_metrics->write(out);
  out.family("dancemoe_scheduler_http_requests_total", "counter",
             "Requests to the scheduler's HTTP endpoint by route and status");
  {
    std::lock_guard<std::mutex> lock(ctx.requests_mutex);
    for (const auto& [key, n] : ctx.requests) {
      out.sample("dancemoe_scheduler_http_requests_total",
                 {{"route", key.first}, {"status", std::to_string(key.second)}},
                 static_cast<double>(n));
    }
  }
  res.status = 200;
  res.set_content(out.text(), "text/plain; version=0.0.4; charset=utf-8");
}

void register_routes(httplib::Server& server, EndpointContext& ctx) {
  server.Get("/health", [&ctx](const httplib::Request&, httplib::Response& res) {
    Result<ordered_json> r = ctx.parts.inbox->call(
        [](SchedulerService&) -> Result<ordered_json> {
          return ordered_json{{"status", "ok"}};
        },
        ctx.options.loop_timeout);
    answer(res, r);
  });
  server.Get("/metrics",
             [&ctx](const httplib::Request&, httplib::Response& res) { write_metrics(ctx, res); });
  for (const char* what : {"status", "nodes"}) {
    server.Get(std::string("/api/") + what,
               [&ctx, what](const httplib::Request&, httplib::Response& res) {
                 answer(res, ask_loop(ctx, what, json::object()));
               });
  }
  server.Get("/api/placement", [&ctx](const httplib::Request& req, httplib::Response& res) {
    Result<int64_t> layer = int_param(req, "layer", -1, 0, 65535);
    if (!layer.is_ok()) return send_error(res, layer.status());
    json args = json::object();
    if (*layer >= 0) args["layer"] = *layer;
    answer(res, ask_loop(ctx, "placement", std::move(args)));
  });
  server.Get(R"(/api/(migrations|decisions))",
             [&ctx](const httplib::Request& req, httplib::Response& res) {
               Result<int64_t> limit = int_param(req, "limit", 20, 1, 1000);
               if (!limit.is_ok()) return send_error(res, limit.status());
               Result<ordered_json> r = ask_loop(ctx, "migrations", {{"limit", *limit}});
               if (r.is_ok() && req.matches[1] == "decisions") {
                 r = ordered_json{{"decisions", (*r)["decisions"]}};
               }
               answer(res, r);
             });
  server.Get("/api/series", [&ctx](const httplib::Request& req, httplib::Response& res) {
    answer(res, series(ctx, req));
  });
  server.Get("/api/heat", [&ctx](const httplib::Request& req, httplib::Response& res) {
    answer(res, heat(ctx, req));
  });
  server.Post("/api/round", [&ctx](const httplib::Request& req, httplib::Response& res) {
    json args = json::object();
    if (!req.body.empty()) {
      if (Status deep = check_json_nesting(req.body, "POST /api/round"); !deep.is_ok()) {
        return send_error(res, deep);
      }
      args = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      if (args.is_discarded() || !args.is_object()) {
        return send_error(res, invalid_argument("POST /api/round: expected a JSON object "
                                                "({} or {\"policy\": NAME})"));
      }
    }
    // Authorized before routing; asked again only to log who.
    spdlog::info("HTTP: placement round asked by {} from {}",
                 ctx.access.authorize(req, HttpRight::kOperate).who, req.remote_addr);
    answer(res,
           ctx.parts.inbox->call(
               [args](SchedulerService& service) { return service.operator_query("round", args); },
               ctx.options.loop_timeout));
  });
  http::serve_static_assets(server, dashboard_assets());
}

void install_handlers(httplib::Server& server, EndpointContext& ctx) {
  server.set_pre_routing_handler([&ctx](const httplib::Request& req, httplib::Response& res) {
    const bool data = req.path.rfind("/api/", 0) == 0 || req.path == "/metrics";
    if (!data) return httplib::Server::HandlerResponse::Unhandled;
    // Reading is a GET (or HEAD); any other method acts.
    const HttpRight right =
        req.method == "GET" || req.method == "HEAD" ? HttpRight::kRead : HttpRight::kOperate;
    const AccessDecision access = ctx.access.authorize(req, right);
    if (access.allowed) return httplib::Server::HandlerResponse::Unhandled;
    http::send_json(res, access.http_status,
                    json{{"error",
                          {{"code", access.http_status == 401 ? "unauthenticated" : "forbidden"},
                           {"message", access.reason}}}});
    if (access.http_status == 401) res.set_header("WWW-Authenticate", "Bearer");
    return httplib::Server::HandlerResponse::Handled;
  });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string message = res.status == 404
                                    ? "no route " + req.method + " " + req.path
                                    : "HTTP " + std::to_string(res.status) + " for " + req.path;
    http::send_json(
        res, res.status,
        json{{"error",
              {{"code", res.status == 404 ? "not_found" : "http_error"}, {"message", message}}}});
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
  server.set_logger([&ctx](const httplib::Request& req, const httplib::Response& res) {
    std::lock_guard<std::mutex> lock(ctx.requests_mutex);
    ++ctx.requests[{route_label(req.path), res.status}];
  });
}

}  // namespace

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::start(const HttpEndpointOptions& options,
                                                          const HttpEndpointParts& parts) {
  if (parts.inbox == nullptr || parts.model == nullptr) {
    return internal_error("HttpEndpoint: the service inbox and the model are required");
  }
  http::HttpListenerOptions listen;
  listen.address = options.address;
  listen.flag = "--http";
  listen.n_threads = options.n_threads;
  listen.max_body_bytes = 64 << 10;  // a round's arguments at most
  std::unique_ptr<HttpEndpoint> endpoint(new HttpEndpoint());
  DMOE_ASSIGN_OR_RETURN(endpoint->listener_, http::HttpListener::bind(listen));
  if (!endpoint->listener_->loopback() && !options.keys && options.insecure_token.empty()) {
    return invalid_argument("--http " + options.address +
                            " is reachable from other machines and this scheduler has no keys "
                            "(--insecure): set --http-token");
  }
  endpoint->context_ = std::make_unique<EndpointContext>(options, parts);
  httplib::Server& server = endpoint->listener_->server();
  install_handlers(server, *endpoint->context_);
  register_routes(server, *endpoint->context_);
  endpoint->bound_address_ = endpoint->listener_->bound_address();
  endpoint->listener_->start();
  return endpoint;
}

HttpEndpoint::~HttpEndpoint() { stop(); }

void HttpEndpoint::stop() {
  if (listener_) listener_->stop();
}

}  // namespace dancemoe::scheduler
