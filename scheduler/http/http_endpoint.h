// HttpEndpoint: the scheduler's HTTP side (issue 19) -- the dashboard page,
// its JSON API and the scheduler's Prometheus metrics, on --http HOST:PORT
// (loopback by default; http_access.h says who may read and who may act).
//
//   GET /                      the dashboard (static files, dashboard_assets.h)
//   GET /health                200 {"status": "ok"} while the service loop answers
//   GET /api/status            the cluster summary, as `dancemoe status --json`
//   GET /api/nodes             every node in detail (devices, memory, peers)
//   GET /api/placement[?layer] the committed placement with each expert's holders
//                              (404 before the first)
//   GET /api/migrations[?limit]  recent migrations and decisions
//   GET /api/decisions[?limit]   recent decisions with the gate's numbers
//   GET /api/series[?window_s=3600&points=120]  history (series_json.h)
//   GET /api/heat[?since_ms]   activation counts per node and expert since the
//                              committed placement (series_json.h)
//   GET /metrics               Prometheus text (scheduler_metrics.h, loop_metrics.h,
//                              and this endpoint's requests by route and status)
//   POST /api/round            a placement round now, as `dancemoe placement round`
//                              (body: {} or {"policy": NAME}); an operator's key
// Errors are {"error": {"code", "message"}}; a bad parameter is a 400
// naming it, a missing, wrong or unknown token a 401, a right the key does
// not have (or a Host that is not a loopback name, without a token) a 403.
//
// Where answers come from: state only the service loop may touch (status,
// nodes, placement, migrations) through the ServiceInbox, waiting at most
// `loop_timeout` (503 when the loop is busy longer, e.g. in a long round);
// history straight from the SQLite file through a SeriesReader of its own
// (WAL: never blocks or delays the loop's writes). Heat is recomputed at
// most every `heat_ttl`, whatever the number of open dashboards.
//
// Handlers run on a bounded pool (common/http/http_listener.h); the parts
// must outlive the endpoint. stop() (or the destructor) joins everything.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/base/status.h"
#include "common/http/http_listener.h"
#include "common/runtime/clock.h"
#include "scheduler/daemon/loop_metrics.h"
#include "scheduler/daemon/model_info.h"
#include "scheduler/daemon/service_inbox.h"
#include "scheduler/http/http_access.h"

namespace dancemoe::scheduler {

struct HttpEndpointOptions {
  std::string address = "127.0.0.1:8090";  // HOST:PORT; port 0: any free port
  std::optional<HttpKeys> keys;            // a keyed scheduler's (http_access.h)
  std::string insecure_token;              // --insecure only: the shared --http-token
  std::string db_path;                     // the store's file
  std::chrono::milliseconds loop_timeout{5000};
  std::chrono::milliseconds heat_ttl{2000};
  size_t n_threads = 8;
};

struct HttpEndpointParts {
  ServiceInbox* inbox = nullptr;
  const ModelInfo* model = nullptr;
  const LoopMetrics* loop_metrics = nullptr;  // may be null
  const Clock* clock = nullptr;               // the series' "now" (wall); null: the system clock
};

struct EndpointContext;

class HttpEndpoint {
 public:
  static Result<std::unique_ptr<HttpEndpoint>> start(const HttpEndpointOptions& options,
                                                     const HttpEndpointParts& parts);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // "127.0.0.1:8090", with the port actually bound.
  const std::string& bound_address() const { return bound_address_; }
  void stop();

 private:
  HttpEndpoint() = default;

  std::unique_ptr<EndpointContext> context_;
  std::unique_ptr<http::HttpListener> listener_;
  std::string bound_address_;
};

}  // namespace dancemoe::scheduler
