#include "scheduler/placement/costs.h"

#include <doctest/doctest.h>

#include "tests/scheduler/placement/fixtures.h"

namespace dancemoe::placement {
namespace {

// 1 layer x 4 experts of 1000 bytes, two nodes of 2 slots each, loads at
// 1e6 B/s (1 ms per expert); counts over a 100 s window, horizon 300 s.
Problem gate_problem() {
  Problem p = testing::small_problem(1, 4, {{2}, {2}}, {{10, 20, 0, 5}, {0, 0, 40, 1}});
  p.cluster.nodes[0].remote_penalty_s = 0.004;
  p.cluster.nodes[1].remote_penalty_s = 0.010;
  p.activations.window_s = 100;
  p.horizon_s = 300;
  return p;
}

Placement two_node(std::vector<ExpertIndex> a, std::vector<ExpertIndex> b) {
  Placement p;
  p.experts = {{std::move(a)}, {std::move(b)}};
  return p;
}

TEST_CASE("placement costs: proxy cost in activations and seconds, local-hit ratio") {
  const Problem p = gate_problem();
  const PlacementCosts c = evaluate_costs(p, two_node({0, 1}, {2, 3}));
  CHECK(c.total_activations == 76);
  CHECK(c.proxy_cost == 5);                                 // node a misses expert 3 (5)
  CHECK(c.proxy_cost_s == doctest::Approx(5 * 3 * 0.004));  // rate*H = count*H/window
  CHECK(c.local_hit_ratio == doctest::Approx(71.0 / 76.0));
  const PlacementCosts c2 = evaluate_costs(p, two_node({1, 3}, {0, 2}));
  CHECK(c2.proxy_cost == 11);
  CHECK(c2.proxy_cost_s == doctest::Approx(10 * 3 * 0.004 + 1 * 3 * 0.010));
}

TEST_CASE("placement costs: local-hit ratio is 1 when nothing was observed") {
  Problem p = testing::small_problem(1, 2, {{1}, {1}});
  CHECK(local_hit_ratio(p, two_node({0}, {1})) == 1.0);
}

TEST_CASE("placement gate: rejects a placement whose saving does not pay for the move") {
  const Problem p = gate_problem();
  const GateDecision g = evaluate_gate(p, two_node({0, 1}, {2, 3}), two_node({1, 3}, {0, 2}));
  CHECK(g.cost_current_s == doctest::Approx(0.06));
  CHECK(g.cost_new_s == doctest::Approx(0.15));
  CHECK(g.migration_s == doctest::Approx(0.002));  // a loads expert 3, b loads expert 0
  CHECK_FALSE(g.adopt);
  CHECK_FALSE(g.coverage_repair);
}

TEST_CASE("placement gate: adopts when C(P') + T_mig < C(P), and not on equality") {
  Problem p = gate_problem();
  GateDecision g = evaluate_gate(p, two_node({1, 3}, {0, 2}), two_node({0, 1}, {2, 3}));
  CHECK(g.cost_current_s == doctest::Approx(0.15));
  CHECK(g.cost_new_s + g.migration_s == doctest::Approx(0.062));
  CHECK(g.adopt);
  // Same placement: no migration, equal costs: strictly-less fails.
  g = evaluate_gate(p, two_node({0, 1}, {2, 3}), two_node({0, 1}, {2, 3}));
  CHECK(g.migration_s == 0.0);
  CHECK_FALSE(g.adopt);
  // Slow loading (1000 B/s: 1 s per expert) makes the same move not worth it.
  for (Node& node : p.cluster.nodes) node.devices[0].load_bytes_per_s = 1000;
  g = evaluate_gate(p, two_node({1, 3}, {0, 2}), two_node({0, 1}, {2, 3}));
  CHECK(g.migration_s == doctest::Approx(2.0));
  CHECK_FALSE(g.adopt);
}

TEST_CASE("placement gate: coverage loss bypasses the cost test") {
  const Problem p = gate_problem();
  // Current placement lost expert 3 (its node died); the repair costs more.
  const GateDecision g = evaluate_gate(p, two_node({0, 1}, {2}), two_node({1, 3}, {0, 2}));
  CHECK(g.coverage_repair);
  CHECK(g.adopt);
}

TEST_CASE("placement migration: additions count, evictions are free, device moves reload") {
  Problem p = testing::small_problem(1, 4, {{2, 2}, {2}});
  p.cluster.nodes[0].devices[0].load_bytes_per_s = 1000;  // 1 s per expert
  p.cluster.nodes[0].devices[1].load_bytes_per_s = 500;   // 2 s per expert
  p.cluster.nodes[1].devices[0].load_bytes_per_s = 250;   // 4 s per expert
  Placement from;
  from.experts = {{{0, 1}, {2}}, {{3}}};
  Placement evict = from;
  evict.experts[0][0] = {0};  // expert 1 evicted: free
  CHECK(migration_s(p, from, evict) == 0.0);
  CHECK(migration_bytes(p, from, evict) == 0);
  Placement device_move = from;
  device_move.experts[0] = {{0}, {1, 2}};  // expert 1 moves gpu0 -> gpu1: one load on gpu1
  CHECK(migration_s(p, from, device_move) == doctest::Approx(2.0));
  Placement node_move = from;
  node_move.experts[0][0] = {0};
  node_move.experts[1][0] = {1, 3};  // expert 1 moves a -> b: one load on b
  CHECK(migration_s(p, from, node_move) == doctest::Approx(4.0));
  CHECK(migration_bytes(p, from, node_move) == 1000);
  Placement replica = from;
  replica.experts[1][0] = {0, 3};  // a new replica of expert 0 on b
  CHECK(migration_s(p, from, replica) == doctest::Approx(4.0));
}

}  // namespace
}  // namespace dancemoe::placement
