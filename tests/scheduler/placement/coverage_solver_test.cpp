#include "scheduler/placement/coverage_solver.h"

#include <doctest/doctest.h>

#include <random>

#include "tests/scheduler/placement/reference_solvers.h"

namespace dancemoe::placement {
namespace {

struct Instance {
  std::vector<std::vector<double>> w;
  std::vector<int64_t> slots;
};

// Random weights; `skewed` makes nodes agree on favourites so that coverage
// has to displace them (the interesting case).
Instance random_instance(std::mt19937& rng, int n_nodes, int n_items, bool allow_negative,
                         bool integer_weights) {
  Instance in;
  std::uniform_int_distribution<int64_t> slot_dist(0, n_items);
  std::uniform_real_distribution<double> value(allow_negative ? -3.0 : 0.0, 10.0);
  std::vector<double> popularity(n_items);
  for (double& p : popularity) p = value(rng);
  in.w.assign(n_nodes, std::vector<double>(n_items));
  for (auto& row : in.w) {
    for (int x = 0; x < n_items; ++x) {
      double v = 0.5 * popularity[x] + 0.5 * value(rng);
      row[x] = integer_weights ? std::round(v) : v;
    }
  }
  int64_t total = 0;
  for (int n = 0; n < n_nodes; ++n) {
    in.slots.push_back(slot_dist(rng) / 2);
    total += in.slots.back();
  }
  // Make it feasible: top up random nodes until the slots cover every item.
  std::uniform_int_distribution<int> pick(0, n_nodes - 1);
  while (total < n_items) {
    const int n = pick(rng);
    if (in.slots[n] < n_items) {
      ++in.slots[n];
      ++total;
    }
  }
  return in;
}

int64_t g_hops = 0;  // path nodes beyond one per repair, summed over solves

double solve(const Instance& in) {
  CoverageInstance instance;
  instance.weight = &in.w;
  instance.slots = in.slots;
  Result<CoverageSolution> solution = solve_coverage(instance);
  REQUIRE(solution.is_ok());
  // The returned sets are feasible and their weight is the reported objective.
  std::vector<int> covered(in.w.front().size(), 0);
  double objective = 0.0;
  for (size_t n = 0; n < in.w.size(); ++n) {
    CHECK(static_cast<int64_t>(solution->sets[n].size()) <= in.slots[n]);
    for (ExpertIndex x : solution->sets[n]) {
      covered[x] = 1;
      objective += in.w[n][x];
    }
  }
  for (int c : covered) CHECK(c == 1);
  CHECK(objective == doctest::Approx(solution->objective));
  g_hops += solution->n_path_nodes - solution->n_deficits;
  CHECK(solution->n_potential_violations == 0);
  return solution->objective;
}

TEST_CASE("coverage solver: equals brute force on every small random instance") {
  std::mt19937 rng(20240601);
  for (int trial = 0; trial < 300; ++trial) {
    const int n_nodes = 1 + static_cast<int>(rng() % 3);
    const int n_items = 1 + static_cast<int>(rng() % 5);
    const bool negative = trial % 2 == 1;
    const Instance in = random_instance(rng, n_nodes, n_items, negative, trial % 3 == 0);
    const double expected = testing::brute_force_coverage(in.w, in.slots);
    CAPTURE(trial);
    CHECK(solve(in) == doctest::Approx(expected));
    // The two references agree with each other as well.
    CHECK(testing::flow_coverage(in.w, in.slots) == doctest::Approx(expected));
  }
}

TEST_CASE("coverage solver: equals a textbook min-cost flow on medium random instances") {
  std::mt19937 rng(777);
  for (int trial = 0; trial < 40; ++trial) {
    const int n_nodes = 2 + static_cast<int>(rng() % 6);
    const int n_items = 5 + static_cast<int>(rng() % 30);
    const Instance in = random_instance(rng, n_nodes, n_items, trial % 2 == 1, trial % 4 == 0);
    CAPTURE(trial);
    CHECK(solve(in) == doctest::Approx(testing::flow_coverage(in.w, in.slots)));
  }
}

TEST_CASE("coverage solver: many nodes sharing favourites force long repair paths") {
  // Every node loves the same items, capacity is tight: nearly every item
  // must be displaced onto some node, through chains of hand-overs.
  std::mt19937 rng(99);
  g_hops = 0;
  for (int trial = 0; trial < 10; ++trial) {
    Instance in;
    const int n_nodes = 6, n_items = 24;
    std::uniform_real_distribution<double> noise(0.0, 1.0);
    in.w.assign(n_nodes, std::vector<double>(n_items));
    for (int n = 0; n < n_nodes; ++n) {
      for (int x = 0; x < n_items; ++x) in.w[n][x] = (x < 4 ? 50.0 : 1.0) * noise(rng);
    }
    in.slots.assign(n_nodes, n_items / n_nodes);
    CHECK(solve(in) == doctest::Approx(testing::flow_coverage(in.w, in.slots)));
  }
  // Some repairs went through hand-overs between nodes, not just one swap.
  CHECK(g_hops > 0);
}

TEST_CASE("coverage solver: equals the textbook flow with many nodes") {
  // More nodes than items per node: exercises the dense node graph, the
  // early-stopping Dijkstra and pairs whose heaps are built late.
  std::mt19937 rng(31337);
  for (int trial = 0; trial < 4; ++trial) {
    const Instance in = random_instance(rng, 30, 40, trial % 2 == 1, trial == 0);
    CAPTURE(trial);
    CHECK(solve(in) == doctest::Approx(testing::flow_coverage(in.w, in.slots)));
  }
}

TEST_CASE("coverage solver: reports infeasible slot totals and bad shapes") {
  std::vector<std::vector<double>> w = {{1, 2, 3}, {3, 2, 1}};
  CoverageInstance instance;
  instance.weight = &w;
  instance.slots = {1, 1};
  Result<CoverageSolution> r = solve_coverage(instance);
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.status().code() == StatusCode::kResourceExhausted);
  instance.slots = {1};
  CHECK(solve_coverage(instance).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("coverage solver: without deficits the per-node top choice is returned untouched") {
  std::vector<std::vector<double>> w = {{5, 4, 0, 0}, {0, 0, 4, 5}};
  CoverageInstance instance;
  instance.weight = &w;
  instance.slots = {2, 2};
  Result<CoverageSolution> r = solve_coverage(instance);
  REQUIRE(r.is_ok());
  CHECK(r->n_deficits == 0);
  CHECK(r->sets[0] == std::vector<ExpertIndex>{0, 1});
  CHECK(r->sets[1] == std::vector<ExpertIndex>{2, 3});
  CHECK(r->objective == 18.0);
}

}  // namespace
}  // namespace dancemoe::placement
