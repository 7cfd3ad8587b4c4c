#include <doctest/doctest.h>

#include <random>

#include "scheduler/placement/costs.h"
#include "scheduler/placement/policy.h"
#include "scheduler/placement/synthetic.h"
#include "tests/scheduler/placement/fixtures.h"

namespace dancemoe::placement {
namespace {

// Single-device nodes (so the solver's T_mig estimate is exact), Zipf
// routing, a current placement from another workload.
Problem migration_problem(uint32_t seed, double load_bytes_per_s) {
  SyntheticProblemSpec spec;
  spec.layers.assign(3, LayerShape{16, 1 << 20});
  spec.n_nodes = 4;
  spec.memory_fraction_min = 0.3;
  spec.memory_fraction_max = 0.6;
  spec.routing.n_tasks = 4;
  spec.routing.seed = seed;
  spec.tokens_per_node = 500;
  spec.load_bytes_per_s = load_bytes_per_s;
  spec.seed = seed;
  Problem p = make_synthetic_problem(spec);
  p.cluster.nodes[1].remote_penalty_s = 0.010;  // unequal penalties matter too
  Problem before = p;
  SyntheticProblemSpec old = spec;
  old.routing.seed = seed + 1000;  // yesterday's workload
  before.activations = make_synthetic_problem(old).activations;
  Result<Placement> current = solve("optimal", before);
  REQUIRE(current.is_ok());
  p.current = *current;
  return p;
}

double gate_lhs(const Problem& p, const Placement& proposed) {
  return proxy_cost_s(p, proposed) + migration_s(p, *p.current, proposed);
}

TEST_CASE("optimal-migration: minimises C(P') + T_mig(P, P') over every policy's answer") {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    for (double speed : {1e6, 1e7, 1e8, 1e10}) {
      const Problem p = migration_problem(seed, speed);
      Result<Placement> best = solve("optimal-migration", p);
      REQUIRE(best.is_ok());
      const double lhs = gate_lhs(p, *best);
      CAPTURE(seed);
      CAPTURE(speed);
      CHECK(lhs <= gate_lhs(p, *p.current) + 1e-9);  // staying put is a candidate
      for (const PolicyInfo& policy : all_policies()) {
        Result<Placement> other = solve(policy.name, p);
        REQUIRE(other.is_ok());
        CHECK(lhs <= gate_lhs(p, *other) + 1e-9);
      }
    }
  }
}

TEST_CASE("optimal-migration: prohibitive loading keeps the current placement") {
  const Problem p = migration_problem(3, 1.0);  // 1 B/s: a megabyte takes 12 days
  Result<Placement> r = solve("optimal-migration", p);
  REQUIRE(r.is_ok());
  CHECK(migration_s(p, *p.current, *r) == 0.0);
  const GateDecision gate = evaluate_gate(p, *p.current, *r);
  CHECK_FALSE(gate.adopt);
}

TEST_CASE("optimal-migration: free loading gives the seconds-weighted optimum") {
  Problem p = migration_problem(5, 1e300);
  for (Node& node : p.cluster.nodes) node.remote_penalty_s = 0.004;  // equal weights
  Result<Placement> mig = solve("optimal-migration", p);
  Result<Placement> opt = solve("optimal", p);
  REQUIRE(mig.is_ok());
  REQUIRE(opt.is_ok());
  CHECK(proxy_cost_activations(p, *mig) == doctest::Approx(proxy_cost_activations(p, *opt)));
}

TEST_CASE("optimal-migration: without a current placement it is optimal weighted by delta") {
  Problem p = migration_problem(7, 1e6);
  p.current.reset();
  for (Node& node : p.cluster.nodes) node.remote_penalty_s = 0.004;
  Result<Placement> mig = solve("optimal-migration", p);
  Result<Placement> opt = solve("optimal", p);
  REQUIRE(mig.is_ok());
  REQUIRE(opt.is_ok());
  CHECK(proxy_cost_activations(p, *mig) == doctest::Approx(proxy_cost_activations(p, *opt)));
}

TEST_CASE("optimal: keeps the current placement's experts among equally good choices") {
  // Node a never uses experts 2 and 3 and has one spare slot: either does.
  // Globally 3 is hotter (3 vs 2), but a holds 2 today, so it keeps 2.
  Problem p = testing::small_problem(1, 4, {{3}, {3}}, {{5, 5, 0, 0}, {0, 1, 2, 3}});
  Placement current = empty_placement(p.cluster);
  current.experts[0][0] = {0, 1, 2};
  current.experts[1][0] = {1, 2, 3};
  p.current = current;
  Result<Placement> r = solve("optimal", p);
  REQUIRE(r.is_ok());
  CHECK(testing::node_set(*r, 0) == std::vector<ExpertIndex>{0, 1, 2});
  CHECK(testing::node_set(*r, 1) == std::vector<ExpertIndex>{1, 2, 3});
  CHECK(migration_s(p, current, *r) == 0.0);
  // Without the current placement, the tie goes to the globally hotter one.
  p.current.reset();
  Result<Placement> fresh = solve("optimal", p);
  REQUIRE(fresh.is_ok());
  CHECK(testing::node_set(*fresh, 0) == std::vector<ExpertIndex>{0, 1, 3});
}

}  // namespace
}  // namespace dancemoe::placement
