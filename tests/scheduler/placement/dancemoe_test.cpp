// The paper's Algorithms 1 and 2 on hand-worked examples, one test per
// resolved ambiguity (scheduler/placement/policies/dancemoe.h).
#include "scheduler/placement/policies/dancemoe.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "scheduler/placement/costs.h"
#include "scheduler/placement/policy.h"
#include "scheduler/placement/synthetic.h"
#include "tests/scheduler/placement/fixtures.h"

namespace dancemoe::placement {
namespace {

using testing::node_set;
using testing::small_problem;

// Two nodes of 4 slots; 2 layers x 4 experts (flat ids: layer 0 = 0..3, layer 1 = 4..7).
//   node a: layer 0 [8,0,0,0] (entropy 0),  layer 1 [1,1,1,1] (entropy 2)
//   node b: layer 0 [1,1,1,1] (entropy 2),  layer 1 [4,2,1,1] (entropy 1.75)
Problem worked_example() {
  return small_problem(2, 4, {{4}, {4}}, {{8, 0, 0, 0, 1, 1, 1, 1}, {1, 1, 1, 1, 4, 2, 1, 1}});
}

TEST_CASE("dancemoe: entropy in bits per node and layer") {
  const Problem p = worked_example();
  const DancemoeCounts c = dancemoe_layer_counts(p, compute_capacity(p.cluster, p.model));
  CHECK(c.entropy_bits[0][0] == doctest::Approx(0.0));
  CHECK(c.entropy_bits[0][1] == doctest::Approx(2.0));
  CHECK(c.entropy_bits[1][0] == doctest::Approx(2.0));
  CHECK(c.entropy_bits[1][1] == doctest::Approx(1.75));
}

TEST_CASE("dancemoe: Algorithm 1 counts with the coverage rebalance, worked by hand") {
  // a: shares 0 and 1 -> N = [0, 4]; b: shares 2/3.75 and 1.75/3.75 of 4 ->
  // ideal [2.13, 1.87] -> floors [2, 1], the spare slot to layer 1 (0.87
  // below its share) -> [2, 2]. Layer totals [2, 6]: layer 0 is short by 2,
  // layer 1 is the donor; servers by descending memory (equal: a first),
  // a has N[a][1] > 0 -> a: [1, 3] then [2, 2].
  const Problem p = worked_example();
  const DancemoeCounts c = dancemoe_layer_counts(p, compute_capacity(p.cluster, p.model));
  CHECK(c.counts[0] == std::vector<int64_t>{2, 2});
  CHECK(c.counts[1] == std::vector<int64_t>{2, 2});
}

TEST_CASE("dancemoe: Algorithm 2 top-N then coverage repair, worked by hand") {
  // Top-N: a takes layer 0 {0, 1 (tie at 0 broken by global count, then
  // id)}, layer 1 {4, 5} (all 1: global counts 5, 3, 2, 2); b takes
  // {0, 1} and {4, 5}. Uncovered: 2, 3 (layer 0), 6, 7 (layer 1).
  // Expert 2: a and b both have 2 duplicates in layer 0; tie -> the server
  // that uses it more: b (1 vs 0). b's least-used duplicate: 0 and 1 both
  // used once; lower global count -> 1. b: {0, 2}.
  // Expert 3: a has 1 duplicate (0), b has 1 (0); tie -> b uses it more;
  // b drops 0. b: {2, 3}.
  // Expert 6: duplicates 2 and 2, a and b use it equally -> lower index a;
  // a drops the least-used duplicate: 4 and 5 used once, lower global count
  // -> 5. Expert 7: a has 1 duplicate (4), b has 1 (4) -> a, drops 4.
  const Problem p = worked_example();
  Result<Placement> r = solve("dancemoe", p);
  REQUIRE(r.is_ok());
  CHECK(node_set(*r, 0) == std::vector<ExpertIndex>{0, 1, 6, 7});
  CHECK(node_set(*r, 1) == std::vector<ExpertIndex>{2, 3, 4, 5});
  // Remote: a misses layer 1's 4, 5 (2); b misses 0, 1 (2) and 6, 7 (2).
  CHECK(proxy_cost_activations(p, *r) == 6);
  // Here every expert has one copy, and this is also the optimum.
  Result<Placement> opt = solve("optimal", p);
  REQUIRE(opt.is_ok());
  CHECK(proxy_cost_activations(p, *opt) == 6);
}

TEST_CASE("dancemoe: a layer never observed counts as maximum entropy") {
  double zeros[4] = {0, 0, 0, 0};
  CHECK(entropy_bits(zeros, 4) == doctest::Approx(2.0));
  // Node a saw layer 0 uniformly (2 bits) and nothing of layer 1 (taken as
  // 2 bits): an even split of its 4 slots.
  Problem p = small_problem(2, 4, {{4}, {8}}, {{1, 1, 1, 1, 0, 0, 0, 0}, {}});
  const DancemoeCounts c = dancemoe_layer_counts(p, compute_capacity(p.cluster, p.model));
  CHECK(c.counts[0] == std::vector<int64_t>{2, 2});
}

TEST_CASE("dancemoe: a node whose layers all have zero entropy splits by expert counts") {
  // Layer 0 has 4 experts, layer 1 has 8 (built by hand: unequal counts).
  Problem p = small_problem(1, 4, {{6}, {12}});
  p.model = ModelShape({LayerShape{4, 1000}, LayerShape{8, 1000}});
  p.activations.counts.assign(2, std::vector<double>(12, 0.0));
  p.activations.counts[0][0] = 5;  // layer 0: one expert only -> 0 bits
  p.activations.counts[0][5] = 3;  // layer 1: one expert only -> 0 bits
  const DancemoeCounts c = dancemoe_layer_counts(p, compute_capacity(p.cluster, p.model));
  CHECK(c.entropy_bits[0][0] == 0.0);
  CHECK(c.entropy_bits[0][1] == 0.0);
  CHECK(c.counts[0] == std::vector<int64_t>{2, 4});  // 6 slots * 4/12 and * 8/12
}

TEST_CASE("dancemoe: rounding remainders go to the layer furthest below its share") {
  // 3 layers x 2 experts, equal entropy everywhere. Node a has 5 slots:
  // ideal 5/3 each -> floors [1, 1, 1], two spare slots -> layers 0 and 1
  // (equal shortfall, lower layer first). Node b has 6: [2, 2, 2].
  Problem p = small_problem(3, 2, {{5}, {6}}, {{1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1}});
  const DancemoeCounts c = dancemoe_layer_counts(p, compute_capacity(p.cluster, p.model));
  CHECK(c.counts[0] == std::vector<int64_t>{2, 2, 1});
  CHECK(c.counts[1] == std::vector<int64_t>{2, 2, 2});
}

TEST_CASE("dancemoe: counts are capped at a layer's expert count and the excess moves on") {
  // Layer 0 has all the entropy but only 2 experts; node a has 4 slots:
  // ideal [4, 0] -> capped [2, 0] -> the 2 spare slots go to layer 1.
  Problem p = small_problem(2, 2, {{4}, {1}}, {{1, 1, 5, 0}, {}});
  const DancemoeCounts c = dancemoe_layer_counts(p, compute_capacity(p.cluster, p.model));
  CHECK(c.counts[0] == std::vector<int64_t>{2, 2});
}

TEST_CASE("dancemoe: the donor layer is the one with the largest surplus") {
  // 3 layers x 2 experts, two nodes of 4 slots.
  // a: entropies [0, 1, 1] -> ideal [0, 2, 2] -> [0, 2, 2].
  // b: layers 0 and 1 at (0.9, 0.1) (0.469 bits), layer 2 at 1 bit ->
  //    ideal [0.97, 0.97, 2.06] -> floors [0, 0, 2], spares to layers 0, 1
  //    -> [1, 1, 2].
  // Totals [1, 3, 4]: layer 0 is short by one; layer 2 (surplus 2) donates
  // rather than layer 1 (surplus 1), on server a (first of equal memory).
  Problem p = small_problem(3, 2, {{4}, {4}}, {{1, 0, 1, 1, 1, 1}, {9, 1, 9, 1, 1, 1}});
  const DancemoeCounts c = dancemoe_layer_counts(p, compute_capacity(p.cluster, p.model));
  CHECK(c.counts[0] == std::vector<int64_t>{1, 2, 1});
  CHECK(c.counts[1] == std::vector<int64_t>{1, 1, 2});
}

TEST_CASE("dancemoe: a short layer borrows from the largest servers first") {
  // 2 layers x 3 experts. Node a (4 slots, larger) and b (3 slots) both
  // only see layer 1: a -> [0, 3] + spare 1 -> [1, 3]; b -> [0, 3].
  // Layer 0 total 1 < 3: borrow 2 slots from layer 1 (surplus 3), first
  // server by memory: a (twice, while N[a][1] > 0) -> a [3, 1], b [0, 3].
  Problem p = small_problem(2, 3, {{4}, {3}}, {{1, 0, 0, 1, 1, 1}, {1, 0, 0, 1, 1, 1}});
  const DancemoeCounts c = dancemoe_layer_counts(p, compute_capacity(p.cluster, p.model));
  CHECK(c.counts[0] == std::vector<int64_t>{3, 1});
  CHECK(c.counts[1] == std::vector<int64_t>{0, 3});
}

TEST_CASE("dancemoe: with equal sizes no layer is left short and no node exceeds its slots") {
  // The claim of dancemoe.h: when total slots cover every expert, a short
  // layer always finds a donor. Random instances, fixed seed.
  std::mt19937 rng(2718);
  for (int trial = 0; trial < 200; ++trial) {
    SyntheticProblemSpec spec;
    const int n_layers = 1 + static_cast<int>(rng() % 6);
    for (int l = 0; l < n_layers; ++l) {
      spec.layers.push_back(LayerShape{2 + static_cast<int32_t>(rng() % 14), 1000});
    }
    spec.n_nodes = 1 + static_cast<int>(rng() % 5);
    spec.devices_max = 2;
    spec.memory_fraction_min = 0.05;
    spec.memory_fraction_max = 0.6;
    spec.routing.n_tasks = 1 + static_cast<int>(rng() % 3);
    spec.routing.zipf_min = 0.0;
    spec.routing.zipf_max = 3.0;  // from flat to one dominant expert (entropy near 0)
    spec.routing.seed = rng();
    spec.tokens_per_node = static_cast<double>(rng() % 300);
    spec.seed = rng();
    const Problem p = make_synthetic_problem(spec);
    REQUIRE(validate_problem(p).is_ok());
    const Capacity cap = compute_capacity(p.cluster, p.model);
    const DancemoeCounts c = dancemoe_layer_counts(p, cap);
    CAPTURE(trial);
    for (int32_t l = 0; l < p.model.n_layers(); ++l) {
      int64_t total = 0;
      for (const auto& row : c.counts) total += row[l];
      CHECK(total >= p.model.n_experts(l));
    }
    for (size_t n = 0; n < c.counts.size(); ++n) {
      int64_t used = 0;
      for (int32_t l = 0; l < p.model.n_layers(); ++l) {
        CHECK(c.counts[n][l] <= p.model.n_experts(l));
        used += c.counts[n][l];
      }
      CHECK(used <= cap.node_slots[n]);
    }
  }
}

TEST_CASE("dancemoe: unequal expert sizes run Algorithm 1 in bytes") {
  // Layer 0 experts 1000 bytes, layer 1 experts 3000 bytes; equal entropy:
  // node a's 8000 bytes split 4000 / 4000 -> N = [4, 1] (floor 4000/3000),
  // 1000 bytes spare -> one more layer-0 expert would exceed E_0 = 4, so
  // it stays free.
  Problem p;
  p.model = ModelShape({LayerShape{4, 1000}, LayerShape{4, 3000}});
  p.cluster.nodes.push_back(Node{"a", 0.001, {Device{"g", 8000, 1e6}}});
  p.cluster.nodes.push_back(Node{"b", 0.001, {Device{"g", 12000, 1e6}, Device{"h", 6000, 1e6}}});
  p.activations.counts = {{1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}};
  const Capacity cap = compute_capacity(p.cluster, p.model);
  CHECK_FALSE(cap.slot_based);
  const DancemoeCounts c = dancemoe_layer_counts(p, cap);
  CHECK(c.counts[0] == std::vector<int64_t>{4, 1});
  Result<Placement> r = solve("dancemoe", p);
  REQUIRE(r.is_ok());
}

}  // namespace
}  // namespace dancemoe::placement
