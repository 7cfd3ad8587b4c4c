// Independent reference solvers for the coverage problem of
// scheduler/placement/coverage_solver.h, used only by tests:
//  - brute_force_coverage: enumerates every choice of sets (tiny instances);
//  - flow_coverage: a textbook min-cost flow on the full node x item network
//    (successive shortest paths with Bellman-Ford, lower bounds as big-M
//    mandatory arcs), sharing no code with the structured solver.
// Both return the optimal objective sum_n sum_{x in S_n} w[n][x], or -inf
// when no set choice covers every item.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace dancemoe::placement::testing {

inline double brute_force_coverage(const std::vector<std::vector<double>>& w,
                                   const std::vector<int64_t>& slots) {
  const size_t n_nodes = w.size();
  const size_t n_items = w.front().size();
  // Every subset (bit mask) of items of size <= slots, per node.
  std::vector<std::vector<uint32_t>> choices(n_nodes);
  for (size_t n = 0; n < n_nodes; ++n) {
    for (uint32_t mask = 0; mask < (1u << n_items); ++mask) {
      if (__builtin_popcount(mask) <= slots[n]) choices[n].push_back(mask);
    }
  }
  double best = -std::numeric_limits<double>::infinity();
  std::function<void(size_t, uint32_t, double)> go = [&](size_t n, uint32_t covered, double v) {
    if (n == n_nodes) {
      if (covered == (1u << n_items) - 1) best = std::max(best, v);
      return;
    }
    for (uint32_t mask : choices[n]) {
      double add = 0.0;
      for (size_t x = 0; x < n_items; ++x) {
        if (mask & (1u << x)) add += w[n][x];
      }
      go(n + 1, covered | mask, v + add);
    }
  };
  go(0, 0, 0.0);
  return best;
}

inline double flow_coverage(const std::vector<std::vector<double>>& w,
                            const std::vector<int64_t>& slots) {
  struct Arc {
    int to;
    int64_t cap;
    double cost;
  };
  const int n_nodes = static_cast<int>(w.size());
  const int n_items = static_cast<int>(w.front().size());
  const int source = 0, sink = 1 + n_nodes + n_items, n_vertices = sink + 1;
  std::vector<Arc> arcs;
  std::vector<std::vector<int>> out(n_vertices);
  auto add_arc = [&](int from, int to, int64_t cap, double cost) {
    out[from].push_back(static_cast<int>(arcs.size()));
    arcs.push_back({to, cap, cost});
    out[to].push_back(static_cast<int>(arcs.size()));
    arcs.push_back({from, 0, -cost});
  };
  double big = 1.0;
  for (const auto& row : w) {
    for (double v : row) big += std::fabs(v);
  }
  big *= 4.0;
  for (int n = 0; n < n_nodes; ++n) add_arc(source, 1 + n, slots[n], 0.0);
  for (int n = 0; n < n_nodes; ++n) {
    for (int x = 0; x < n_items; ++x) add_arc(1 + n, 1 + n_nodes + x, 1, -w[n][x]);
  }
  for (int x = 0; x < n_items; ++x) {
    add_arc(1 + n_nodes + x, sink, 1, -big);  // mandatory copy
    add_arc(1 + n_nodes + x, sink, n_nodes, 0.0);
  }
  double cost = 0.0;
  while (true) {
    std::vector<double> dist(n_vertices, std::numeric_limits<double>::infinity());
    std::vector<int> via(n_vertices, -1);
    dist[source] = 0.0;
    for (int round = 0; round < n_vertices; ++round) {
      bool changed = false;
      for (int u = 0; u < n_vertices; ++u) {
        if (dist[u] == std::numeric_limits<double>::infinity()) continue;
        for (int a : out[u]) {
          if (arcs[a].cap > 0 && dist[u] + arcs[a].cost < dist[arcs[a].to] - 1e-9) {
            dist[arcs[a].to] = dist[u] + arcs[a].cost;
            via[arcs[a].to] = a;
            changed = true;
          }
        }
      }
      if (!changed) break;
    }
    if (!(dist[sink] < -1e-9)) break;  // no path that lowers the cost
    for (int v = sink; v != source; v = arcs[via[v] ^ 1].to) {
      arcs[via[v]].cap -= 1;
      arcs[via[v] ^ 1].cap += 1;
    }
    cost += dist[sink];
  }
  // Every mandatory arc used <=> every item covered.
  int covered = 0;
  for (int x = 0; x < n_items; ++x) {
    for (int a : out[1 + n_nodes + x]) {
      if (arcs[a].to == sink && arcs[a].cost == -big && arcs[a].cap == 0) ++covered;
    }
  }
  if (covered < n_items) return -std::numeric_limits<double>::infinity();
  return -(cost + big * n_items);
}

}  // namespace dancemoe::placement::testing
