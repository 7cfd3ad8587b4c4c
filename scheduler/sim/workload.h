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
// calibration part of the trace (disjoint from what is replayed); its
// co-activation pairs are counted on the calibration part, or on
// `profile_tokens` tokens drawn from each synthetic task, and reported as a
// node would report one window (at most placement.coactivation_pairs per
// layer; a mixture's pairs are the mean of its tasks').
//
// Immutable after creation; safe to share between threads.
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/status.h"
#include "scheduler/placement/types.h"
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
                                std::vector<std::vector<double>> profile,
                                std::vector<std::vector<placement::PairCount>> profile_pairs = {});

  // Sorted by arrival time (ties: node index).
  const std::vector<SimRequest>& requests() const { return requests_; }
  // profile()[node][layer * n_experts + expert]: counts for the initial placement.
  const std::vector<std::vector<double>>& profile() const { return profile_; }
  // [node] -> pairs of flat ids (layer * n_experts + expert); may be empty.
  const std::vector<std::vector<placement::PairCount>>& profile_pairs() const {
    return profile_pairs_;
  }
  int64_t total_tokens() const { return total_tokens_; }

 private:
  std::vector<SimRequest> requests_;
  std::vector<std::vector<double>> profile_;
  std::vector<std::vector<placement::PairCount>> profile_pairs_;
  int64_t total_tokens_ = 0;
};

}  // namespace dancemoe::sim
