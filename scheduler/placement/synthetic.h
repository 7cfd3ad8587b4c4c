// Synthetic routing statistics and placement problems, for tests, the
// benchmark and the simulator's synthetic workload.
//
// Routing model: each task type has, for every layer, its own ranking of the
// layer's experts (a random permutation) and a Zipf exponent s drawn per
// layer, so that skew varies by layer and different tasks favour different
// experts: P(expert of rank r) ~ 1 / (r + 1)^s. A node runs one task type.
//
// Deterministic for a given seed (std::mt19937). Values, no I/O; safe from
// any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "scheduler/placement/types.h"

namespace dancemoe::placement {

struct RoutingProfile {
  // probability[task][layer][expert], each [task][layer] row sums to 1.
  std::vector<std::vector<std::vector<double>>> probability;
  // zipf_s[task][layer]: the exponent used.
  std::vector<std::vector<double>> zipf_s;
};

struct RoutingProfileSpec {
  int32_t n_tasks = 1;
  double zipf_min = 0.6;  // exponents drawn uniformly in [zipf_min, zipf_max]
  double zipf_max = 1.2;
  // Share of each task's ranking copied from a common ranking (0: tasks
  // independent, 1: all tasks alike): real workloads share popular experts.
  double shared_ranking = 0.0;
  uint32_t seed = 1;
};

RoutingProfile make_routing_profile(const ModelShape& model, const RoutingProfileSpec& spec);

struct SyntheticProblemSpec {
  std::vector<LayerShape> layers;
  int32_t n_nodes = 4;
  int32_t devices_min = 1;  // devices per node drawn uniformly in [min, max]
  int32_t devices_max = 1;
  // A node's expert memory as a fraction of all experts' bytes, drawn
  // uniformly per node; every device holds at least one expert, and budgets
  // are raised in proportion if the cluster cannot hold every expert once.
  double memory_fraction_min = 0.3;
  double memory_fraction_max = 0.3;
  RoutingProfileSpec routing;  // node n runs task n % n_tasks
  int32_t top_k = 8;
  double tokens_per_node = 10000;  // tokens routed per node in the window
  bool sample_counts = true;       // Poisson counts around the expectation
  double remote_penalty_s = 0.004;
  double load_bytes_per_s = 2.0e9;
  double window_s = 300.0;
  double horizon_s = 300.0;
  uint32_t seed = 1;
};

Problem make_synthetic_problem(const SyntheticProblemSpec& spec);

}  // namespace dancemoe::placement
