// Properties every policy must have, on random instances with fixed seeds.
#include <doctest/doctest.h>

#include <random>

#include "scheduler/placement/costs.h"
#include "scheduler/placement/policy.h"
#include "scheduler/placement/synthetic.h"
#include "scheduler/placement/validate.h"
#include "tests/scheduler/placement/fixtures.h"
#include "tests/scheduler/placement/reference_solvers.h"

namespace dancemoe::placement {
namespace {

// A random instance: 1-6 nodes with 1-3 devices, 1-4 layers of 2-12
// experts, memory per node 10-90 % of the model, Zipf routing from 1-3
// tasks; optionally unequal expert sizes per layer and a current placement.
Problem random_layered_problem(std::mt19937& rng, bool unequal_sizes, int max_layers = 4,
                               int max_experts = 12, int max_nodes = 6) {
  auto uniform_int = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  SyntheticProblemSpec spec;
  const int n_layers = uniform_int(1, max_layers);
  for (int l = 0; l < n_layers; ++l) {
    const uint64_t bytes = unequal_sizes ? 1000u * uniform_int(1, 4) : 1000u;
    spec.layers.push_back(LayerShape{uniform_int(2, max_experts), bytes});
  }
  spec.n_nodes = uniform_int(1, max_nodes);
  spec.devices_min = 1;
  spec.devices_max = 3;
  spec.memory_fraction_min = 0.1;
  spec.memory_fraction_max = 0.9;
  spec.routing.n_tasks = uniform_int(1, 3);
  spec.routing.shared_ranking = std::uniform_real_distribution<double>(0, 1)(rng);
  spec.routing.seed = rng();
  spec.tokens_per_node = uniform_int(0, 3) == 0 ? 0 : uniform_int(1, 400);
  spec.top_k = 2;
  spec.seed = rng();
  return make_synthetic_problem(spec);
}

TEST_CASE("placement policies: every policy covers every expert and respects every device") {
  std::mt19937 rng(4242);
  int checked = 0, fallbacks = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const bool unequal = trial % 3 == 2;
    Problem problem = random_layered_problem(rng, unequal);
    if (!validate_problem(problem).is_ok()) continue;  // e.g. fragmentation: refused, fine
    if (trial % 2 == 1) {
      // With a current placement (another policy's answer) for stickiness
      // and the migration-aware weights.
      Result<Placement> current = solve("uniform", problem);
      REQUIRE_MESSAGE(current.is_ok(), current.status().to_string());
      problem.current = *current;
    }
    for (const PolicyInfo& policy : all_policies()) {
      CAPTURE(trial);
      CAPTURE(policy.name);
      Result<Placement> placement = solve(policy.name, problem);
      // `solve` checks coverage and memory; any violation is an internal error.
      REQUIRE_MESSAGE(placement.is_ok(), placement.status().to_string());
      CHECK(check_placement(problem, *placement).is_ok());
      CHECK_FALSE(placement->method.empty());
      fallbacks += placement->method.find("fallback") != std::string::npos ? 1 : 0;
      ++checked;
    }
  }
  CHECK(checked > 700);
  MESSAGE("placements checked: " << checked << ", fragmentation fallbacks: " << fallbacks);
}

TEST_CASE("placement policies: optimal is never worse than any other policy (equal sizes)") {
  std::mt19937 rng(1717);
  for (int trial = 0; trial < 120; ++trial) {
    Problem problem = random_layered_problem(rng, false);
    REQUIRE(validate_problem(problem).is_ok());
    Result<Placement> optimal = solve("optimal", problem);
    REQUIRE(optimal.is_ok());
    const double best = proxy_cost_activations(problem, *optimal);
    for (const PolicyInfo& policy : all_policies()) {
      Result<Placement> other = solve(policy.name, problem);
      REQUIRE(other.is_ok());
      CAPTURE(trial);
      CAPTURE(policy.name);
      CHECK(best <= proxy_cost_activations(problem, *other) + 1e-9);
    }
  }
}

TEST_CASE("placement policies: optimal equals the brute-force optimum on small instances") {
  std::mt19937 rng(9);
  int compared = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Problem problem = random_layered_problem(rng, false, 2, 4, 3);
    const int n_total = problem.model.n_experts_total();
    if (n_total > 7) continue;
    REQUIRE(validate_problem(problem).is_ok());
    const Capacity cap = compute_capacity(problem.cluster, problem.model);
    const double best_kept =
        testing::brute_force_coverage(problem.activations.counts, cap.node_slots);
    double total = 0;
    for (const auto& row : problem.activations.counts) {
      for (double v : row) total += v;
    }
    Result<Placement> optimal = solve("optimal", problem);
    REQUIRE(optimal.is_ok());
    CAPTURE(trial);
    CHECK(proxy_cost_activations(problem, *optimal) == doctest::Approx(total - best_kept));
    ++compared;
  }
  CHECK(compared > 30);
}

TEST_CASE("placement policies: unknown names are refused with the list of known ones") {
  Problem problem = testing::small_problem(1, 2, {{1}, {1}});
  Result<Placement> r = solve("greedy", problem);
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message().find("optimal-migration") != std::string::npos);
  CHECK(find_policy("dancemoe") != nullptr);
  CHECK(all_policies().size() == 8);
}

TEST_CASE("placement policies: infeasible problems are refused before any policy runs") {
  Problem problem = testing::small_problem(1, 5, {{2}, {2}});
  for (const PolicyInfo& policy : all_policies()) {
    CHECK(solve(policy.name, problem).status().code() == StatusCode::kResourceExhausted);
  }
}

TEST_CASE("placement policies: are deterministic") {
  std::mt19937 rng(5);
  Problem problem = random_layered_problem(rng, false);
  for (const PolicyInfo& policy : all_policies()) {
    Result<Placement> a = solve(policy.name, problem);
    Result<Placement> b = solve(policy.name, problem);
    REQUIRE(a.is_ok());
    CHECK(a->experts == b->experts);
  }
}

TEST_CASE("placement policies: baselines behave as documented on a hand example") {
  // 1 layer x 4 experts; two nodes of 3 slots; node a uses experts 0,1;
  // node b uses 2,3; globally expert 0 is the hottest.
  Problem p = testing::small_problem(1, 4, {{3}, {3}}, {{50, 10, 0, 0}, {5, 0, 20, 30}});
  auto set = [&](const char* policy, size_t n) {
    Result<Placement> r = solve(policy, p);
    REQUIRE(r.is_ok());
    return testing::node_set(*r, n);
  };
  // uniform: one copy each, interleaved; spare memory unused.
  CHECK(set("uniform", 0).size() + set("uniform", 1).size() == 4);
  // redundance: the uniform copies (a: 0, 2; b: 1, 3), then the spare slot
  // by global popularity (0: 55, 3: 30, 2: 20, 1: 10).
  CHECK(set("redundance", 0) == std::vector<ExpertIndex>{0, 2, 3});
  CHECK(set("redundance", 1) == std::vector<ExpertIndex>{0, 1, 3});
  // smartmoe: one copy each, heaviest first onto the least-loaded node.
  CHECK(set("smartmoe", 0).size() + set("smartmoe", 1).size() == 4);
  // optimal: each node keeps what it uses; a's free slot goes to the
  // globally hotter of its zero-count experts (3 over 2).
  CHECK(set("optimal", 0) == std::vector<ExpertIndex>{0, 1, 3});
  CHECK(set("optimal", 1) == std::vector<ExpertIndex>{0, 2, 3});
  Result<Placement> opt = solve("optimal", p);
  CHECK(proxy_cost_activations(p, *opt) == 0);
}

}  // namespace
}  // namespace dancemoe::placement
