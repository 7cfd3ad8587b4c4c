// RoutingReplay: `dancemoe-node --replay-routing FILE --replay-origins SPEC`,
// for studies of placement on a running cluster (tests/bench/
// bench_placement_runtime.cpp, docs/placement-latency.md). The router still
// runs, but each MoE layer's expert choices are replaced by those recorded in
// a routing trace (common/placement/routing_trace.h, e.g. the shared OLMoE
// trace), so a cluster of generated random-weight models routes like a real
// model serving a real workload: each node its own domain, with that
// domain's co-activation. Everything else is real: the dense compute, the
// experts' weights and compute, the calls to peers, the reports.
//
//   SPEC = ORIGIN,ORIGIN,...   e.g. "general,coding,math,reasoning"
//
// A request whose first prompt token is t replays origin SPEC[t mod |SPEC|]:
// the client picks each request's domain (the runtime study sends token 1
// for coding), so a workload shift is the client's to make, at any time. An
// origin's recorded requests are used in id order, cycling. Token i of a
// request (its position: prompt tokens first, then generated ones) replays
// token i mod n of the recorded request; its MoE layer j replays the trace's
// layer j. The gate weights stay the router's, in rank order (the router's
// top weight goes to the recorded e0), so each token's output is still a
// convex mix of the experts it uses.
//
// With --record-trace too, the recorder sees the router's own choices (it
// observes the routing before the replay rewrites it for the executor).
//
// Not thread-safe: used from the thread that runs the forward pass.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/inference/routing.h"
#include "common/model/model_config.h"
#include "common/placement/routing_trace.h"

namespace dancemoe::node {

class RoutingReplay {
 public:
  // invalid_argument naming the file or the spec when the trace does not fit
  // the model (MoE layers, top-k, expert ids) or names no such origin.
  static Result<std::unique_ptr<RoutingReplay>> open(const std::filesystem::path& path,
                                                     const std::string& spec,
                                                     const ModelConfig& config);

  // A new request whose prompt starts with `first_token`: picks the origin
  // and the next recorded request of it.
  void begin_request(int32_t first_token);
  // The position of the next token fed to the model.
  void begin_forward(int64_t first_position) { first_position_ = first_position; }

  // The routing of absolute layer `layer` with the recorded experts; the
  // reference stays valid until the next call.
  const RoutingDecision& rewrite(int64_t layer, const RoutingDecision& routing);

  // The origin the current request replays (for logs and tests).
  const std::string& current_origin() const;

 private:
  RoutingReplay() = default;

  RoutingTrace trace_;
  std::vector<std::vector<int32_t>> by_origin_;  // [origin] -> request indices, id order
  std::vector<int32_t> origins_;                 // SPEC, as indices into trace_.origins
  std::vector<int32_t> moe_index_;               // [layer] -> index among MoE layers, -1 for dense
  std::vector<int64_t> next_of_origin_;          // [origin] -> how many of its requests were used
  int32_t current_ = -1;                         // trace request being replayed
  int64_t first_position_ = 0;
  RoutingDecision out_;
};

}  // namespace dancemoe::node
