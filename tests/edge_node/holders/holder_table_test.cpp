#include "edge_node/holders/holder_table.h"

#include <doctest/doctest.h>

#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {

TEST_CASE("routing table: local experts, remote holders by peer index, and coverage") {
  test_support::TinyModel model;
  const std::vector<int32_t> layers = model.moe_layers();
  ClusterPlacement p = test_support::make_placement(
      4, {{"b", "tcp://b:1", {0, 1, 2}}, {"a", "tcp://a:1", {2, 3}}, {"c", "tcp://c:1", {3, 4, 5}}},
      layers);
  auto table = HolderTable::build(p, "b", model.config(), {"cpu"});
  REQUIRE(table.is_ok());
  const HolderTable& t = **table;
  CHECK(t.version() == 4);
  REQUIRE(t.peers().size() == 2);
  CHECK(t.peers()[0].node_id == "a");  // sorted, self left out
  CHECK(t.peers()[1].node_id == "c");
  CHECK(t.peer_index("c") == 1);
  CHECK(t.peer_index("b") == -1);
  CHECK(t.is_local(layers[0], 1));
  CHECK_FALSE(t.is_local(layers[0], 3));
  auto holders3 = t.remote_holders(layers[1], 3);
  REQUIRE(holders3.size() == 2);
  CHECK(holders3[0] == 0);
  CHECK(holders3[1] == 1);
  CHECK(t.remote_holders(layers[0], 0).empty());  // local only
  CHECK(t.remote_holders(layers[0], 6).empty());  // nobody
  CHECK_FALSE(t.covers_all());
  CHECK(t.n_uncovered() == 2 * static_cast<int64_t>(layers.size()));  // experts 6 and 7
  CHECK(t.local_experts().size() == 3 * layers.size());
}

TEST_CASE(
    "routing table: the empty table holds nothing and a node absent from the placement none") {
  test_support::TinyModel model;
  auto empty = HolderTable::empty(model.config());
  CHECK(empty->version() == 0);
  CHECK(empty->peers().empty());
  CHECK(empty->local_experts().empty());
  ClusterPlacement p = test_support::make_placement(
      1, {{"a", "tcp://a:1", {0, 1, 2, 3, 4, 5, 6, 7}}}, model.moe_layers());
  auto thin = HolderTable::build(p, "thin-client", model.config(), {"cpu"});
  REQUIRE(thin.is_ok());
  CHECK((*thin)->local_experts().empty());
  CHECK((*thin)->covers_all());
  CHECK((*thin)->remote_holders(0, 5).size() == 1);
}

}  // namespace dancemoe::node

namespace dancemoe::node {

TEST_CASE("routing table: local experts keep the device the placement names") {
  test_support::TinyModel model;
  const std::vector<int32_t> layers = model.moe_layers();
  ClusterPlacement p;
  p.version = 3;
  NodePlacement a{"a", "tcp://a:1", {{"cpu:0", {}}, {"cpu:1", {}}}};
  for (int32_t l : layers) {
    a.devices[0].experts.push_back({l, 0});
    a.devices[1].experts.push_back({l, 5});
  }
  p.nodes.push_back(a);
  auto table = HolderTable::build(p, "a", model.config(), {"cpu:0", "cpu:1"});
  REQUIRE(table.is_ok());
  CHECK((*table)->local_device(layers[0], 0) == 0);
  CHECK((*table)->local_device(layers[0], 5) == 1);
  CHECK((*table)->local_device(layers[0], 3) == -1);
  const std::vector<ExpertRef> keys = (*table)->local_experts();
  const std::vector<int32_t> devices = (*table)->local_devices();
  REQUIRE(keys.size() == devices.size());
  for (size_t i = 0; i < keys.size(); ++i) CHECK(devices[i] == (keys[i].expert == 0 ? 0 : 1));
}

TEST_CASE("routing table: a device the node does not have is refused, naming it and the node's") {
  test_support::TinyModel model;
  ClusterPlacement p =
      test_support::make_placement(7, {{"a", "tcp://a:1", {0, 1}}}, model.moe_layers());
  p.nodes[0].devices[0].device = "cuda:3";
  auto table = HolderTable::build(p, "a", model.config(), {"cpu:0", "cpu:1"});
  REQUIRE_FALSE(table.is_ok());
  CHECK(table.status().message().find("'cuda:3'") != std::string::npos);
  CHECK(table.status().message().find("cpu:0, cpu:1") != std::string::npos);
  // A peer's devices are the peer's business.
  CHECK(HolderTable::build(p, "b", model.config(), {"cpu"}).is_ok());
}

}  // namespace dancemoe::node
