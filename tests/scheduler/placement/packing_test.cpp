#include "scheduler/placement/packing.h"

#include <doctest/doctest.h>

#include "scheduler/placement/validate.h"
#include "tests/scheduler/placement/fixtures.h"

namespace dancemoe::placement {
namespace {

double device_load(const Problem& p, const Placement& pl, size_t n, size_t g) {
  double load = 0;
  for (ExpertIndex x : pl.experts[n][g]) load += p.activations.counts[n][x];
  return load;
}

TEST_CASE("placement packing: balances activation load across a node's devices") {
  // One node, two devices of 3 slots, six experts with loads 9,8,7,3,2,1:
  // heaviest first to the least-loaded device gives 9+3+2=14 vs 8+7+1=16.
  Problem p = testing::small_problem(1, 6, {{3, 3}}, {{9, 8, 7, 3, 2, 1}});
  const Capacity cap = compute_capacity(p.cluster, p.model);
  Result<Placement> r = pack_onto_devices(p, cap, {{0, 1, 2, 3, 4, 5}}, "test");
  REQUIRE(r.is_ok());
  CHECK(r->experts[0][0] == std::vector<ExpertIndex>{0, 3, 4});
  CHECK(r->experts[0][1] == std::vector<ExpertIndex>{1, 2, 5});
  CHECK(device_load(p, *r, 0, 0) == 14);
  CHECK(device_load(p, *r, 0, 1) == 16);
  CHECK(r->method == "test");
}

TEST_CASE("placement packing: a fast device gets the hot experts, a slow one the cold ones") {
  // A GPU (cost 0.1) and a CPU (cost 1) with 3 slots each: finishing
  // soonest sends the three hottest experts to the GPU while it has room.
  Problem p = testing::small_problem(1, 6, {{3, 3}}, {{9, 8, 7, 3, 2, 1}});
  p.cluster.nodes[0].devices[0].compute_cost = 0.1;
  p.cluster.nodes[0].devices[1].compute_cost = 1.0;
  const Capacity cap = compute_capacity(p.cluster, p.model);
  Result<Placement> r = pack_onto_devices(p, cap, {{0, 1, 2, 3, 4, 5}}, "test");
  REQUIRE(r.is_ok());
  CHECK(r->experts[0][0] == std::vector<ExpertIndex>{0, 1, 2});
  CHECK(r->experts[0][1] == std::vector<ExpertIndex>{3, 4, 5});
  // The slow device listed first: the same split, mirrored.
  std::swap(p.cluster.nodes[0].devices[0].compute_cost, p.cluster.nodes[0].devices[1].compute_cost);
  r = pack_onto_devices(p, cap, {{0, 1, 2, 3, 4, 5}}, "test");
  REQUIRE(r.is_ok());
  CHECK(r->experts[0][1] == std::vector<ExpertIndex>{0, 1, 2});
  CHECK(r->experts[0][0] == std::vector<ExpertIndex>{3, 4, 5});
}

TEST_CASE("placement packing: respects unequal device sizes") {
  Problem p = testing::small_problem(1, 5, {{4, 1}}, {{5, 4, 3, 2, 1}});
  const Capacity cap = compute_capacity(p.cluster, p.model);
  Result<Placement> r = pack_onto_devices(p, cap, {{0, 1, 2, 3, 4}}, "test");
  REQUIRE(r.is_ok());
  CHECK(r->experts[0][0].size() == 4);
  CHECK(r->experts[0][1].size() == 1);
  CHECK(check_placement(p, *r).is_ok());
}

TEST_CASE("placement packing: experts a node keeps stay on their current device") {
  Problem p = testing::small_problem(1, 6, {{3, 3}}, {{9, 8, 7, 3, 2, 1}});
  Placement current = empty_placement(p.cluster);
  current.experts[0][0] = {1, 2};  // the two heavy ones share gpu0 today
  current.experts[0][1] = {0};
  p.current = current;
  const Capacity cap = compute_capacity(p.cluster, p.model);
  Result<Placement> r = pack_onto_devices(p, cap, {{0, 1, 2, 3, 4, 5}}, "test");
  REQUIRE(r.is_ok());
  CHECK(r->experts[0][0] == std::vector<ExpertIndex>{1, 2, 5});
  CHECK(r->experts[0][1] == std::vector<ExpertIndex>{0, 3, 4});
}

TEST_CASE("placement packing: a set larger than the node's slots is a policy bug") {
  Problem p = testing::small_problem(1, 3, {{1}, {2}});
  const Capacity cap = compute_capacity(p.cluster, p.model);
  CHECK(pack_onto_devices(p, cap, {{0, 1}, {2}}, "test").status().code() == StatusCode::kInternal);
}

TEST_CASE("placement packing: unequal sizes drop a replica that fragmentation leaves out") {
  // Node a: two devices of 500 bytes; its set {big 400, big 400, small 200}
  // cannot fit (the smalls fit only beside one big each... 400+200 > 500).
  Problem p;
  p.model = ModelShape({LayerShape{2, 400}, LayerShape{1, 200}});
  p.cluster.nodes.push_back(Node{"a", 0.001, {Device{"g0", 500, 1e6}, Device{"g1", 500, 1e6}}});
  p.cluster.nodes.push_back(Node{"b", 0.001, {Device{"g0", 600, 1e6}}});
  p.activations.counts = {{5, 5, 1}, {1, 1, 5}};
  const Capacity cap = compute_capacity(p.cluster, p.model);
  Result<Placement> r = pack_onto_devices(p, cap, {{0, 1, 2}, {2}}, "test");
  REQUIRE(r.is_ok());
  CHECK(testing::node_set(*r, 0) == std::vector<ExpertIndex>{0, 1});  // replica of 2 dropped
  CHECK(check_placement(p, *r).is_ok());
}

TEST_CASE("placement packing: unequal sizes move a sole copy to another node") {
  Problem p;
  p.model = ModelShape({LayerShape{2, 400}, LayerShape{1, 200}});
  p.cluster.nodes.push_back(Node{"a", 0.001, {Device{"g0", 500, 1e6}, Device{"g1", 500, 1e6}}});
  p.cluster.nodes.push_back(Node{"b", 0.001, {Device{"g0", 600, 1e6}}});
  p.activations.counts = {{5, 5, 1}, {1, 1, 5}};
  const Capacity cap = compute_capacity(p.cluster, p.model);
  Result<Placement> r = pack_onto_devices(p, cap, {{0, 1, 2}, {}}, "test");
  REQUIRE(r.is_ok());
  CHECK(testing::node_set(*r, 1) == std::vector<ExpertIndex>{2});
  CHECK(check_placement(p, *r).is_ok());
}

}  // namespace
}  // namespace dancemoe::placement
