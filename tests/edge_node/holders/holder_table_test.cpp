#include "edge_node/holders/holder_table.h"

#include <doctest/doctest.h>

#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {

TEST_CASE("routing table: local experts, remote holders by peer index, and coverage") {
  testing::TinyModel model;
  const std::vector<int32_t> layers = model.moe_layers();
  ClusterPlacement p = testing::make_placement(
      4, {{"b", "tcp://b:1", {0, 1, 2}}, {"a", "tcp://a:1", {2, 3}}, {"c", "tcp://c:1", {3, 4, 5}}},
      layers);
  auto table = HolderTable::build(p, "b", model.config());
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
  testing::TinyModel model;
  auto empty = HolderTable::empty(model.config());
  CHECK(empty->version() == 0);
  CHECK(empty->peers().empty());
  CHECK(empty->local_experts().empty());
  ClusterPlacement p = testing::make_placement(1, {{"a", "tcp://a:1", {0, 1, 2, 3, 4, 5, 6, 7}}},
                                               model.moe_layers());
  auto thin = HolderTable::build(p, "thin-client", model.config());
  REQUIRE(thin.is_ok());
  CHECK((*thin)->local_experts().empty());
  CHECK((*thin)->covers_all());
  CHECK((*thin)->remote_holders(0, 5).size() == 1);
}

}  // namespace dancemoe::node
