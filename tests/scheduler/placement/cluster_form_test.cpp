#include "scheduler/placement/cluster_form.h"

#include <doctest/doctest.h>

#include "common/placement/placement_json.h"
#include "scheduler/placement/json_io.h"
#include "scheduler/placement/policy.h"

namespace dancemoe::placement {
namespace {

Problem two_layers() {
  Result<Problem> p = problem_from_json(nlohmann::json::parse(R"({
    "model": {"layers": [{"experts": 2, "expert_bytes": 10}, {"experts": 3, "expert_bytes": 30}]},
    "nodes": [{"id": "a", "remote_penalty_s": 0.5,
               "devices": [{"id": "g", "expert_budget_bytes": 200, "load_bytes_per_s": 7}]}],
    "activations": {"a": [[1, 2], [3, 4, 5]]}})"));
  REQUIRE(p.is_ok());
  return *p;
}

TEST_CASE("cluster form: a solved placement survives the one JSON form and back") {
  const Problem p = two_layers();
  Result<Placement> solved = solve("optimal", p);
  REQUIRE(solved.is_ok());
  const ClusterPlacement cluster = to_cluster_placement(p, *solved, 4);
  CHECK(cluster.version == 4);
  REQUIRE(cluster.nodes.size() == 1);
  CHECK(cluster.nodes[0].node_id == "a");
  CHECK(cluster.nodes[0].devices[0].device == "g");
  CHECK(cluster.nodes[0].experts().size() == 5);
  const nlohmann::json text = nlohmann::json::parse(placement_to_json(cluster).dump());
  Result<ClusterPlacement> read = placement_from_json(text, "solved.json", Endpoints::kOptional);
  REQUIRE(read.is_ok());
  CHECK(*read == cluster);
  Result<Placement> back = from_cluster_placement(p, *read);
  REQUIRE(back.is_ok());
  CHECK(back->experts == solved->experts);
}

TEST_CASE("cluster form: unknown ids and experts outside the model are named") {
  const Problem p = two_layers();
  ClusterPlacement c{1, {{"a", "", {{"g", {{1, 3}}}}}}};
  CHECK(from_cluster_placement(p, c).status().message() ==
        "placement.a.g[0]: no expert 3 in layer 1 of the model");
  c = {1, {{"z", "", {}}}};
  CHECK(from_cluster_placement(p, c).status().message().find("no node with id 'z'") !=
        std::string::npos);
  c = {1, {{"a", "", {{"gpu9", {}}}}}};
  CHECK(from_cluster_placement(p, c).status().message().find("has no device 'gpu9'") !=
        std::string::npos);
  c = {1, {{"a", "", {{"g", {{0, 1}, {0, 1}}}}}}};
  CHECK(from_cluster_placement(p, c).status().message().find("lists an expert twice") !=
        std::string::npos);
  // Nodes and devices left out hold nothing.
  Result<Placement> empty = from_cluster_placement(p, ClusterPlacement{1, {}});
  REQUIRE(empty.is_ok());
  CHECK(empty->experts[0][0].empty());
}

}  // namespace
}  // namespace dancemoe::placement
