// Exact solver behind `optimal` and `optimal-migration` (equal expert sizes).
//
// Problem (a b-matching with coverage lower bounds):
//   maximise   sum_n sum_{x in S_n} w[n][x]
//   subject to |S_n| <= slots[n]                 for every node n
//              x in S_n for at least one n        for every item x
// With w[n][x] = f[n][x] this minimises the paper's proxy cost (Eq. 2), since
// A(P) = sum f - sum over held (n, x) of f[n][x]. Weights may be negative
// (migration-aware weights: saving minus load cost); then a node may leave
// slots empty.
//
// Why the answer is exact. As a min-cost flow: source -> node n (capacity
// slots[n]), node n -> item x (capacity 1, cost -w[n][x]), item x -> sink
// (lower bound 1, capacity n_nodes), and a return arc sink -> source (cost 0)
// so that the amount of flow is free. Node capacities and item bounds are the
// two sides of a bipartite incidence matrix, which is totally unimodular, so
// the LP has integral vertices and an integral min-cost flow is an optimum
// of the integer problem.
//
// How it is fast. n_nodes is small (tens) and n_items large (thousands), so
// the solver never builds the n_nodes x n_items network. Without coverage,
// each node taking its top-slots items of non-negative weight is optimal.
// Every item that no node took (a deficit) then raises one lower bound from
// 0 to 1; by the conformal decomposition of (new optimum - old optimum), the
// new optimum is the old one plus one cheapest cycle through that item's
// bound, i.e. a shortest path in the residual network from the sink to the
// item. Such a path alternates: the sink hands back a surplus copy (an item
// held by >= 2 nodes) or a free slot, node a drops it, a adds an item y that
// node b holds, b drops y, ..., the last node adds the deficit item. So the
// residual network collapses to a dense graph on the nodes alone:
//   start(n)   = 0 if n has a free slot, else the least w[n][y] over its
//                surplus items y                         (root -> n)
//   edge(a, b) = min over y in S_b \ S_a of w[b][y] - w[a][y]      (a -> b)
//   finish(n)  = -w[n][x]                                 (n -> deficit x)
// Each deficit costs one Dijkstra over n_nodes vertices with Johnson
// potentials (the previous distances keep reduced costs non-negative, the
// standard successive-shortest-path invariant; a virtual arc root -> n of a
// large cost keeps every node reachable), stopped early once no unsettled
// node can finish cheaper. Edge values come from one lazily cleaned min-heap
// of candidate items per node pair, updated when a path changes a set, so a
// path of L nodes costs O(L * n_nodes * log) heap work. See
// docs/placement-report.md for the measured times.
//
// Pure function; safe from any thread.
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/status.h"
#include "scheduler/placement/packing.h"

namespace dancemoe::placement {

struct CoverageInstance {
  // w[n][x]: the value of node n holding item x; finite, any sign.
  const std::vector<std::vector<double>>* weight = nullptr;
  std::vector<int64_t> slots;  // per node, >= 0
  // Optional tie-breaks among equal weights in the initial per-node choice
  // (they never change the objective): prefer[n][x] != 0 first (e.g. already
  // held), then higher tie_key[x] (e.g. global popularity), then lower id.
  const std::vector<std::vector<uint8_t>>* prefer = nullptr;
  const std::vector<double>* tie_key = nullptr;
};

struct CoverageSolution {
  NodeSets sets;             // per node, ascending ids
  double objective = 0.0;    // sum of w over held (n, x)
  int64_t n_deficits = 0;    // items the per-node top choice left uncovered
  int64_t n_path_nodes = 0;  // total length of the augmenting paths
  // Reduced costs found negative beyond rounding during the search: a broken
  // invariant (tests require 0; the search clamps them and stays feasible).
  int64_t n_potential_violations = 0;
};

// invalid_argument if the shapes disagree; resource_exhausted if the slots
// cannot cover every item once.
Result<CoverageSolution> solve_coverage(const CoverageInstance& instance);

}  // namespace dancemoe::placement
