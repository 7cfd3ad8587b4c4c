// The common engine of `optimal` and `optimal-migration`: given per-(node,
// expert) weights w[n][x] (the value of n holding x), choose node sets that
// maximise the total weight under coverage and memory, then pack them.
//
// Equal expert sizes: exact, by the coverage solver (coverage_solver.h).
// Unequal sizes (the problem is then a multiple-knapsack with coverage, which
// is NP-hard): a documented heuristic, reported in Placement::method:
//   1. each node takes experts of non-negative weight in descending weight
//      per byte while they fit (ties: preferred, then tie key, then lower id);
//   2. each uncovered expert (highest best-node weight first) goes to the node
//      where making room costs least: free bytes first, then dropping the
//      node's replicas (experts also held elsewhere) of least weight per byte;
//      cost = dropped weight - the expert's weight on that node.
//
// Pure function; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "common/base/status.h"
#include "scheduler/placement/types.h"

namespace dancemoe::placement {

struct WeightedChoice {
  const std::vector<std::vector<double>>* weight = nullptr;   // [node][expert]
  const std::vector<std::vector<uint8_t>>* prefer = nullptr;  // optional tie-break
  const std::vector<double>* tie_key = nullptr;               // optional tie-break
  std::string label;                                          // policy name for Placement::method
};

Result<Placement> place_by_weight(const Problem& problem, const WeightedChoice& choice);

}  // namespace dancemoe::placement
