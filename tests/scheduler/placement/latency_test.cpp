// `latency` (scheduler/placement/policies/latency.h): hand-worked examples and
// properties.
#include "scheduler/placement/policies/latency.h"

#include <doctest/doctest.h>

#include <random>

#include "scheduler/placement/costs.h"
#include "scheduler/placement/policy.h"
#include "scheduler/placement/step_model.h"
#include "scheduler/placement/synthetic.h"
#include "scheduler/placement/validate.h"
#include "tests/scheduler/placement/fixtures.h"

namespace dancemoe::placement {
namespace {

double latency_cost(const Problem& p, const Placement& placement) {
  Result<StepModel> steps = StepModel::create(p);
  REQUIRE(steps.is_ok());
  return evaluate_steps(p, *steps, placement).cost_s;
}

// Two layers of four experts, top-2; nodes a and b with four slots each, so
// coverage leaves no replica. Both nodes route uniformly: 100 tokens, every
// expert of every layer 50 times.
Problem two_layer_problem() {
  std::vector<double> uniform(8, 50.0);
  Problem p = testing::small_problem(2, 4, {{4}, {4}}, {uniform, uniform});
  p.activations.experts_per_token = 2;
  return p;
}

TEST_CASE("latency: whole layers beat the same memory spread over layers (hand example)") {
  const Problem p = two_layer_problem();
  Result<Placement> r = solve("latency", p);
  REQUIRE(r.is_ok());
  // Ties between the nodes go to a (lower index), which takes layer 0; b
  // cannot take layer 0 too (nobody would cover layer 1), so it takes layer 1.
  CHECK(testing::node_set(*r, 0) == std::vector<ExpertIndex>{0, 1, 2, 3});
  CHECK(testing::node_set(*r, 1) == std::vector<ExpertIndex>{4, 5, 6, 7});
  // Cost by hand: each node's steps at the other layer (100) wait for one
  // peer, which holds that whole layer (no second peer); d = delta = 4 ms
  // (no compute measured), H / window = 1: 2 x 100 x 0.004 = 0.8 s.
  Result<StepModel> steps = StepModel::create(p);
  REQUIRE(steps.is_ok());
  const StepCosts costs = evaluate_steps(p, *steps, *r);
  CHECK(costs.remote_steps == doctest::Approx(200));
  CHECK(costs.extra_peer_steps == doctest::Approx(0));
  CHECK(costs.cost_s == doctest::Approx(0.8));
  CHECK(costs.local_step_ratio() == doctest::Approx(0.5));

  // Two experts of each layer per node: a step is local only when both of
  // its experts are among the node's two, 1 in C(4,2) = 6 (the sequential
  // estimate is exact for uniform routing), so 2 x 100 x 5/6 steps wait and
  // every one needs the other node only.
  Placement split = empty_placement(p.cluster);
  split.experts[0][0] = {0, 1, 4, 5};
  split.experts[1][0] = {2, 3, 6, 7};
  const StepCosts spread = evaluate_steps(p, *steps, split);
  CHECK(spread.remote_steps == doctest::Approx(2 * 2 * 100 * 5.0 / 6.0));
  // The paper's objective cannot tell the two apart: 50 % local activations each.
  CHECK(local_hit_ratio(p, *r) == doctest::Approx(local_hit_ratio(p, split)));
  CHECK(latency_cost(p, split) > latency_cost(p, *r));
}

// One layer of four experts, top-2; node a holds two experts, b the other
// two. Tokens of a: {0, 1} x 40, {2, 3} x 40, {0, 2} x 5, so experts 0 and 2
// are the most used (45 each), but a step is local only with a pair that is
// routed together.
Problem coactivation_problem(bool with_pairs) {
  Problem p = testing::small_problem(1, 4, {{2}, {2}}, {{45, 40, 45, 40}, {0, 0, 0, 0}});
  p.activations.experts_per_token = 2;
  if (with_pairs) {
    // What node a's reports list: the pairs above independence.
    p.activations.pairs = {{{0, 1, 40}, {2, 3, 40}}, {}};
  }
  return p;
}

TEST_CASE("latency: co-activated experts stay together (hand example)") {
  // Without pairs the most used experts, 0 and 2, look best: yet only the 5
  // tokens that pick both are local. With the reported pairs the chain drops
  // 3 and 2 together (their pair leaves with them) and keeps {0, 1}: 40 local.
  Result<Placement> blind = solve("latency", coactivation_problem(false));
  Result<Placement> aware = solve("latency", coactivation_problem(true));
  REQUIRE(blind.is_ok());
  REQUIRE(aware.is_ok());
  CHECK(testing::node_set(*blind, 0) == std::vector<ExpertIndex>{0, 2});
  CHECK(testing::node_set(*aware, 0) == std::vector<ExpertIndex>{0, 1});
  CHECK(testing::node_set(*aware, 1) == std::vector<ExpertIndex>{2, 3});
}

TEST_CASE("latency: build_chain orders a layer by co-activation and prices its prefixes") {
  const Problem p = coactivation_problem(true);
  Result<StepModel> steps = StepModel::create(p);
  REQUIRE(steps.is_ok());
  const std::vector<double> no_load(4, 0.0);
  const LayerChain chain = build_chain(steps->at(0, 0), {1.0, 0.0, no_load});
  REQUIRE(chain.order.size() == 4);
  CHECK(chain.order[0] == 0);
  CHECK(chain.order[1] == 1);
  REQUIRE(chain.value.size() == 5);
  // T = 85 steps at 1 s each; the whole layer is always local.
  CHECK(chain.value[4] == doctest::Approx(85.0));
  for (size_t s = 1; s < chain.value.size(); ++s) CHECK(chain.value[s] >= chain.value[s - 1]);
  // Loading an expert that is not held yet lowers every prefix holding it.
  std::vector<double> load(4, 0.0);
  load[0] = 10.0;
  const LayerChain loaded = build_chain(steps->at(0, 0), {1.0, 0.0, load});
  CHECK(loaded.value[4] == doctest::Approx(75.0));
}

// Random instances, with and without a current placement.
Problem random_problem(std::mt19937& rng, bool unequal_sizes) {
  auto uniform_int = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  SyntheticProblemSpec spec;
  const int n_layers = uniform_int(1, 4);
  for (int l = 0; l < n_layers; ++l) {
    spec.layers.push_back(
        LayerShape{uniform_int(2, 10), unequal_sizes ? 1000u * uniform_int(1, 3) : 1000u});
  }
  spec.n_nodes = uniform_int(1, 5);
  spec.devices_max = 2;
  spec.memory_fraction_min = 0.2;
  spec.memory_fraction_max = 0.9;
  spec.routing.n_tasks = uniform_int(1, 3);
  spec.routing.seed = rng();
  spec.top_k = 2;
  spec.tokens_per_node = uniform_int(0, 300);
  spec.load_bytes_per_s = std::uniform_real_distribution<double>(1e3, 1e6)(rng);
  spec.seed = rng();
  Problem p = make_synthetic_problem(spec);
  for (Node& node : p.cluster.nodes) {
    node.remote_penalty_s = std::uniform_real_distribution<double>(0.0, 0.01)(rng);
    node.expert_compute_s = uniform_int(0, 1) * 1e-4;
  }
  return p;
}

TEST_CASE("latency: never worse on its own objective than coverage alone, optimal or staying") {
  std::mt19937 rng(2026);
  int checked = 0;
  for (int trial = 0; trial < 120; ++trial) {
    Problem p = random_problem(rng, trial % 4 == 3);
    if (!validate_problem(p).is_ok()) continue;
    if (trial % 2 == 1) {
      Result<Placement> current = solve("dancemoe", p);
      REQUIRE(current.is_ok());
      p.current = *current;
    }
    Result<Placement> r = solve("latency", p);
    REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
    auto total = [&](const Placement& placement) {
      return latency_cost(p, placement) + (p.current ? migration_s(p, *p.current, placement) : 0);
    };
    const double mine = total(*r);
    CAPTURE(trial);
    for (const char* other : {"uniform", "optimal"}) {
      Result<Placement> o = solve(other, p);
      REQUIRE(o.is_ok());
      CHECK(mine <= total(*o) + 1e-9);
    }
    if (p.current) CHECK(mine <= total(*p.current) + 1e-9);
    ++checked;
  }
  CHECK(checked > 80);
}

TEST_CASE("latency: prohibitive loading keeps the current placement and its gate then rejects") {
  std::mt19937 rng(7);
  Problem p = random_problem(rng, false);
  while (!validate_problem(p).is_ok() || p.cluster.nodes.size() < 2) p = random_problem(rng, false);
  Result<Placement> current = solve("uniform", p);
  REQUIRE(current.is_ok());
  p.current = *current;
  for (Node& node : p.cluster.nodes) {
    for (Device& device : node.devices) device.load_bytes_per_s = 1e-3;
  }
  Result<Placement> r = solve("latency", p);
  REQUIRE(r.is_ok());
  CHECK(migration_s(p, *p.current, *r) == 0.0);
  CHECK_FALSE(evaluate_gate(p, *p.current, *r, Objective::kLatency).adopt);
}

TEST_CASE("latency: its gate compares the latency cost, not the proxy cost") {
  Problem p = two_layer_problem();
  Placement split = empty_placement(p.cluster);
  split.experts[0][0] = {0, 1, 4, 5};
  split.experts[1][0] = {2, 3, 6, 7};
  p.current = split;
  Result<Placement> r = solve("latency", p);
  REQUIRE(r.is_ok());
  // Loading is fast (1 MB/s, 1 kB experts: 1 ms each): whole layers pay.
  const GateDecision by_latency = evaluate_gate(p, split, *r, Objective::kLatency);
  CHECK(by_latency.adopt);
  CHECK(by_latency.cost_new_s == doctest::Approx(0.8));
  CHECK(by_latency.cost_current_s == doctest::Approx(2 * 2 * 100 * 5.0 / 6.0 * 0.004));
  // The paper's proxy sees no gain at all, so its gate would refuse.
  CHECK_FALSE(evaluate_gate(p, split, *r, Objective::kActivations).adopt);
  CHECK(find_policy("latency")->objective == Objective::kLatency);
  CHECK(find_policy("optimal")->objective == Objective::kActivations);
}

TEST_CASE("latency: needs the experts each token picks") {
  Problem p = two_layer_problem();
  p.activations.experts_per_token = 0;
  Result<Placement> r = solve("latency", p);
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(r.status().message().find("experts_per_token") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::placement
