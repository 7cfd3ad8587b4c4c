// The requests of one simulated scenario, generated once and shared by every
// policy's run (common random numbers: each policy sees the same arrivals and
// the same expert choices).
//
// Arrivals are a Poisson process per node (its own std::mt19937 stream). A
// request's routing (top-k experts per token and layer) is fixed at arrival
// from the node's task at that time (shifts change the task):
//  - synthetic: per task and layer a Zipf distribution over a task-specific
//    ranking (scheduler/placement/synthetic.h); k distinct experts drawn per
//    token and layer, most likely first;
//  - trace: a request replays one recorded request (sequence) of the task's
//    origin in the routing trace, drawn uniformly from the replay part.
// The profile (statistics behind the initial placement) is the expected
// counts of each node's initial task (synthetic), or the counts of the
// calibration part of the trace (disjoint from what is replayed).
//
// Immutable after creation; safe to share between threads.
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/status.h"
#include "scheduler/sim/config.h"

namespace dancemoe::sim {

struct SimRequest {
  double arrival_s = 0.0;
  int32_t node = 0;
  int32_t n_tokens = 0;
  // experts[(token * n_layers + layer) * top_k + rank]
  std::vector<int16_t> experts;
};

class Workload {
 public:
  static Result<Workload> create(const SimConfig& config);
  // A hand-made workload (tests, replaying recorded runs): requests are
  // sorted by arrival; profile is [node][layer * n_experts + expert].
  static Workload from_requests(std::vector<SimRequest> requests,
                                std::vector<std::vector<double>> profile);

  // Sorted by arrival time (ties: node index).
  const std::vector<SimRequest>& requests() const { return requests_; }
  // profile()[node][layer * n_experts + expert]: counts for the initial placement.
  const std::vector<std::vector<double>>& profile() const { return profile_; }
  int64_t total_tokens() const { return total_tokens_; }

 private:
  std::vector<SimRequest> requests_;
  std::vector<std::vector<double>> profile_;
  int64_t total_tokens_ = 0;
};

}  // namespace dancemoe::sim
