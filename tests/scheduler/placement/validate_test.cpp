#include "scheduler/placement/validate.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "tests/scheduler/placement/fixtures.h"

namespace dancemoe::placement {
namespace {

using testing::small_problem;

TEST_CASE("placement validate: capacity counts whole experts per device") {
  Problem p = small_problem(1, 8, {{3, 2}, {4}});
  p.cluster.nodes[0].devices[0].expert_budget_bytes = 3999;  // 3 whole experts of 1000 bytes
  const Capacity cap = compute_capacity(p.cluster, p.model);
  CHECK(cap.slot_based);
  CHECK(cap.device_slots[0] == std::vector<int64_t>{3, 2});
  CHECK(cap.node_slots == std::vector<int64_t>{5, 4});
  CHECK(cap.node_bytes == std::vector<uint64_t>{5000, 4000});
  CHECK(validate_problem(p).is_ok());
}

TEST_CASE("placement validate: a node's slots are capped at the number of experts") {
  Problem p = small_problem(1, 4, {{10}, {1}});
  CHECK(compute_capacity(p.cluster, p.model).node_slots == std::vector<int64_t>{4, 1});
}

TEST_CASE("placement validate: too little memory says how many bytes are missing") {
  Problem p = small_problem(2, 4, {{3}, {3}});  // 6 slots for 8 experts
  Status s = validate_problem(p);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.message().find("missing 2 expert slots (2000 bytes)") != std::string::npos);
}

TEST_CASE("placement validate: fragmentation counts: budgets that hold no whole expert") {
  Problem p = small_problem(1, 2, {{1}, {1}});
  p.cluster.nodes[1].devices[0].expert_budget_bytes = 999;
  Status s = validate_problem(p);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.message().find("node 'b' can hold no expert") != std::string::npos);
}

TEST_CASE("placement validate: a node with zero memory is refused, naming it") {
  Problem p = small_problem(1, 2, {{2}, {0}});
  Status s = validate_problem(p);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.message().find("node 'b'") != std::string::npos);
  CHECK(s.message().find("1000 bytes") != std::string::npos);
}

TEST_CASE("placement validate: negative and non-finite counts name node, layer and expert") {
  Problem p = small_problem(2, 3, {{6}});
  p.activations.counts[0][4] = -1;
  Status s = validate_problem(p);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("node 'a', layer 1 expert 1") != std::string::npos);
  p.activations.counts[0][4] = std::numeric_limits<double>::quiet_NaN();
  CHECK(validate_problem(p).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("placement validate: mismatched shapes are invalid_argument") {
  Problem p = small_problem(2, 3, {{6}});
  p.activations.counts[0].pop_back();
  Status s = validate_problem(p);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("expected 6 counts") != std::string::npos);
  p = small_problem(2, 3, {{6}});
  p.activations.counts.push_back(p.activations.counts[0]);
  CHECK(validate_problem(p).message().find("counts for 1 nodes, got 2") != std::string::npos);
}

TEST_CASE("placement validate: ids, bandwidth, horizon and window are checked") {
  Problem p = small_problem(1, 2, {{1}, {1}});
  p.cluster.nodes[1].id = "a";
  CHECK(validate_problem(p).message().find("appears twice") != std::string::npos);
  p = small_problem(1, 2, {{1}, {1}});
  p.cluster.nodes[0].devices[0].load_bytes_per_s = 0;
  CHECK(validate_problem(p).message().find("load_bytes_per_s") != std::string::npos);
  p = small_problem(1, 2, {{1}, {1}});
  p.horizon_s = 0;
  CHECK(validate_problem(p).message().find("horizon_s") != std::string::npos);
  p = small_problem(1, 2, {{1}, {1}});
  p.activations.window_s = -1;
  CHECK(validate_problem(p).message().find("window_s") != std::string::npos);
  p = small_problem(1, 2, {{1}, {1}});
  p.cluster.nodes[0].devices.clear();
  CHECK(validate_problem(p).message().find("has no device") != std::string::npos);
}

TEST_CASE("placement validate: unequal sizes count bytes, and say so when short") {
  Problem p;
  p.model = ModelShape({LayerShape{2, 100}, LayerShape{2, 300}});
  p.cluster.nodes.push_back(Node{"a", 0.001, {Device{"g", 500, 1e6}}});
  p.cluster.nodes.push_back(Node{"b", 0.001, {Device{"g", 200, 1e6}}});
  p.activations.counts.assign(2, std::vector<double>(4, 1.0));
  Status s = validate_problem(p);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.message().find("need 800 bytes, the devices offer 700 bytes; missing 100 bytes") !=
        std::string::npos);
  CHECK_FALSE(compute_capacity(p.cluster, p.model).slot_based);
}

TEST_CASE("placement check: detects uncovered experts, memory overflow and duplicates") {
  Problem p = small_problem(1, 3, {{2}, {2}});
  Placement ok = empty_placement(p.cluster);
  ok.experts[0][0] = {0, 1};
  ok.experts[1][0] = {2};
  CHECK(check_placement(p, ok).is_ok());
  Placement uncovered = ok;
  uncovered.experts[1][0] = {};
  CHECK(check_placement(p, uncovered).code() == StatusCode::kFailedPrecondition);
  PlacementCheck no_coverage;
  no_coverage.require_coverage = false;
  CHECK(check_placement(p, uncovered, no_coverage).is_ok());
  Placement over = ok;
  over.experts[1][0] = {0, 1, 2};
  CHECK(check_placement(p, over).code() == StatusCode::kResourceExhausted);
  Placement unsorted = ok;
  unsorted.experts[0][0] = {1, 0};
  CHECK(check_placement(p, unsorted).code() == StatusCode::kInvalidArgument);
  Placement bad_id = ok;
  bad_id.experts[1][0] = {7};
  CHECK(check_placement(p, bad_id).code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dancemoe::placement
