#include "common/placement/placement_json.h"

#include <doctest/doctest.h>

#include <fstream>
#include <tuple>

#include "tests/support/paths.h"

namespace dancemoe {
namespace {

using nlohmann::json;

// Layers 0, 2 and 3 are MoE layers of 8 experts; layer 1 is dense.
ModelConfig four_layers() {
  ModelConfig config;
  config.n_layers = 4;
  config.n_experts = 8;
  config.layer_is_moe = {true, false, true, true};
  return config;
}

// One device "cpu" per node holding `experts` of every layer in `layers`.
ClusterPlacement make_placement(
    uint64_t version,
    const std::vector<std::tuple<std::string, std::string, std::vector<int32_t>>>& nodes,
    const std::vector<int32_t>& layers) {
  ClusterPlacement p{version, {}};
  for (const auto& [id, endpoint, experts] : nodes) {
    NodePlacement n{id, endpoint, {{"cpu", {}}}};
    for (int32_t l : layers) {
      for (int32_t e : experts) n.devices[0].experts.push_back({l, e});
    }
    p.nodes.push_back(std::move(n));
  }
  return p;
}

Status parse_error(const std::string& text) {
  Result<ClusterPlacement> p = placement_from_json(json::parse(text), "p.json");
  REQUIRE_FALSE(p.is_ok());
  return p.status();
}

}  // namespace

TEST_CASE("placement file: the nodes form is read, sorted by node id, experts deduplicated") {
  Result<ClusterPlacement> p = placement_from_json(json::parse(R"({
    "version": 3,
    "nodes": {
      "b": {"expert_endpoint": "tcp://127.0.0.1:2", "devices": {"cpu": [[0, 1], [0, 1], [2, 0]]}},
      "a": {"expert_endpoint": "tcp://127.0.0.1:1", "devices": {"cpu": [[2, 5]], "gpu0": [[0, 7]]}}
    }})"),
                                                   "p.json");
  REQUIRE(p.is_ok());
  CHECK(p->version == 3);
  REQUIRE(p->nodes.size() == 2);
  CHECK(p->nodes[0].node_id == "a");
  CHECK(p->nodes[0].devices.size() == 2);
  CHECK(p->nodes[1].expert_endpoint == "tcp://127.0.0.1:2");
  const std::vector<ExpertRef> b = p->nodes[1].experts();
  REQUIRE(b.size() == 2);
  CHECK(b[0] == ExpertRef{0, 1});
  CHECK(b[1] == ExpertRef{2, 0});
  CHECK(p->find("a") == &p->nodes[0]);
  CHECK(p->find("z") == nullptr);
}

TEST_CASE("placement file: the output of placement solve plus endpoints is accepted") {
  Result<ClusterPlacement> p = placement_from_json(json::parse(R"({
    "policy": "dancemoe",
    "placement": {"a": {"cpu": [[0, 0], [0, 1]]}, "b": {"cpu": [[0, 2]]}},
    "endpoints": {"a": "tcp://h1:5551", "b": "tcp://h2:5551"}})"),
                                                   "p.json");
  REQUIRE(p.is_ok());
  CHECK(p->version == 1);  // default
  CHECK(p->nodes[1].expert_endpoint == "tcp://h2:5551");
  CHECK(p->nodes[0].experts().size() == 2);
}

TEST_CASE("placement file: errors name the file, the JSON path and what was expected") {
  CHECK(parse_error(R"({"nodes": {"a": {"devices": {}}}})").message() ==
        "p.json: nodes.a.expert_endpoint: expected a ZeroMQ endpoint string such as "
        "\"tcp://127.0.0.1:5551\", got nothing (the field is missing)");
  Status pair = parse_error(
      R"({"nodes": {"a": {"expert_endpoint": "tcp://x:1", "devices": {"cpu": [[0, -1]]}}}})");
  CHECK(pair.message().find("nodes.a.devices.cpu[0]") != std::string::npos);
  CHECK(pair.message().find("[layer, expert]") != std::string::npos);
  CHECK(parse_error(R"({"nodes": {}, "placement": {}})").message().find("exactly one of") !=
        std::string::npos);
  CHECK(parse_error(R"({"placement": {"a": {"cpu": []}}, "endpoints": {}})").message() ==
        "p.json: endpoints.a: expected a ZeroMQ endpoint string such as "
        "\"tcp://127.0.0.1:5551\", got nothing (the field is missing)");
  CHECK(parse_error(R"({"version": 0, "nodes": {}})").message().find("version") !=
        std::string::npos);
  CHECK(parse_error("[1, 2]").code() == StatusCode::kInvalidArgument);
}

TEST_CASE("placement file: an unreadable or non-JSON file is a clear error") {
  dancemoe::testing::TempDir dir("placement_file");
  CHECK(read_placement_file(dir.path() / "missing.json").status().code() == StatusCode::kNotFound);
  std::ofstream(dir.path() / "bad.json") << "{not json";
  Result<ClusterPlacement> bad = read_placement_file(dir.path() / "bad.json");
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("malformed JSON") != std::string::npos);
}

TEST_CASE("placement: checked against the model -- dense layers and out-of-range experts refused") {
  const ModelConfig config = four_layers();
  ClusterPlacement p = make_placement(1, {{"a", "tcp://x:1", {0, 1}}}, {0});
  CHECK(check_against_model(p, config, "p").is_ok());
  p.nodes[0].devices[0].experts.push_back({1, 0});  // layer 1 is dense
  Status dense = check_against_model(p, config, "p");
  CHECK(dense.message().find("dense layer") != std::string::npos);
  p.nodes[0].devices[0].experts.back() = {0, static_cast<int32_t>(config.n_experts)};
  CHECK(check_against_model(p, config, "p").message().find("expert out of range") !=
        std::string::npos);
  p.nodes[0].devices[0].experts.back() = {static_cast<int32_t>(config.n_layers), 0};
  CHECK(check_against_model(p, config, "p").message().find("layer out of range") !=
        std::string::npos);
  ClusterPlacement twice = make_placement(1, {{"a", "e", {0}}, {"a", "e", {1}}}, {0});
  CHECK(check_against_model(twice, config, "p").message().find("more than once") !=
        std::string::npos);
}

TEST_CASE("placement: the JSON form round-trips") {
  ClusterPlacement p =
      make_placement(7, {{"a", "tcp://x:1", {0, 3}}, {"b", "tcp://x:2", {1}}}, {0, 2});
  Result<ClusterPlacement> from_json = placement_from_json(placement_to_json(p), "j");
  REQUIRE(from_json.is_ok());
  CHECK(from_json->nodes[1].experts() == p.nodes[1].experts());
  CHECK(from_json->version == 7);
}

}  // namespace dancemoe
