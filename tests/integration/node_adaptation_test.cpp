// Adaptation with real processes, standalone (issue 5, "Adaptation"): three
// nodes start on a cold-start placement, each is driven with prompts of its
// own domain, a new placement is computed from the nodes' own activation
// counts with the scheduler's placement library (the same function the
// scheduler daemon runs), the nodes migrate to it live (placement file v2 +
// SIGHUP: prepare in the background, then commit), and each node's local-hit
// ratio rises. The run with the scheduler daemon deciding is the lead's
// end-to-end test; this one shows the node side of it.
#include <doctest/doctest.h>
#include <signal.h>

#include <random>

#include "common/model/checkpoint.h"
#include "scheduler/placement/policy.h"
#include "tests/integration/node_cluster.h"

namespace dancemoe::testing {
namespace {

using namespace std::chrono_literals;

double drive_node(NodeProcess& node, int domain, int n_prompts) {
  for (int i = 0; i < n_prompts; ++i) {
    node.generate({{"prompt_tokens", domain_prompt(domain, static_cast<uint32_t>(i))},
                   {"max_tokens", 8},
                   {"temperature", 0}});
  }
  return node.stats()["activations"]["since_version"]["local_hit_ratio"].get<double>();
}

}  // namespace

TEST_CASE("node adaptation: a placement from the nodes' own counts raises every local-hit ratio") {
  TempDir work("node_adaptation");
  const std::filesystem::path model = work.path() / "small";
  SyntheticModelSpec spec;
  spec.preset = "small";
  write_model(spec, model);
  const std::vector<int32_t> layers = moe_layers_of(model);
  std::ifstream in(model / "config.json");
  const int32_t n_experts = json::parse(in)["num_experts"].get<int32_t>();
  const std::vector<std::string> ids = {"a", "b", "c"};

  // Cold start: half the experts on each node, coverage complete.
  PlacementSpec cold;
  cold.layer_shift = 5;
  for (int32_t x = 0; x < n_experts / 2; ++x) {
    cold.experts["a"].push_back(x);
    cold.experts["b"].push_back(n_experts / 4 + x);
    cold.experts["c"].push_back(n_experts / 2 + x);
  }
  std::map<std::string, std::string> endpoints;
  std::map<std::string, int> ports;
  for (const std::string& id : ids) endpoints[id] = endpoint_of(ports[id] = free_tcp_port());
  const std::filesystem::path placement_file = work.path() / "placement.json";
  write_json(placement_file, placement_json(cold, layers, n_experts, endpoints));
  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
  for (const std::string& id : ids) {
    nodes[id] = std::make_unique<NodeProcess>(
        work.path(), id, node_args(model, ports[id], {"--placement", placement_file.string()}));
  }
  for (const std::string& id : ids) REQUIRE(nodes[id]->wait_ready());

  std::map<std::string, double> before;
  for (size_t n = 0; n < ids.size(); ++n)
    before[ids[n]] = drive_node(*nodes[ids[n]], static_cast<int>(n), 6);

  // The scheduler's computation, from the counts each node reports.
  placement::Problem problem;
  std::vector<placement::LayerShape> shapes;
  auto checkpoint = Checkpoint::open(model);
  REQUIRE(checkpoint.is_ok());
  const uint64_t expert_bytes = (*checkpoint)->expert_bytes(layers[0], 0);
  for (size_t l = 0; l < layers.size(); ++l) shapes.push_back({n_experts, expert_bytes});
  problem.model = placement::ModelShape(shapes);
  for (const std::string& id : ids) {
    problem.cluster.nodes.push_back(
        {id, 0.001, {{"cpu", expert_bytes * layers.size() * n_experts / 2, 1e9}}});
    const json counts = nodes[id]->stats()["counts_since_version"];
    std::vector<double> f;
    for (int32_t l : layers) {
      for (int32_t e = 0; e < n_experts; ++e)
        f.push_back(counts[static_cast<size_t>(l)][static_cast<size_t>(e)].get<double>());
    }
    problem.activations.counts.push_back(f);
  }
  Result<placement::Placement> solved = placement::solve("dancemoe", problem);
  REQUIRE(solved.is_ok());
  json nodes_json = json::object();
  for (size_t n = 0; n < ids.size(); ++n) {
    json list = json::array();
    for (placement::ExpertIndex x : solved->experts[n][0]) {
      list.push_back({layers[static_cast<size_t>(problem.model.layer_of(x))],
                      problem.model.expert_in_layer(x)});
    }
    nodes_json[ids[n]] = {{"expert_endpoint", endpoints[ids[n]]}, {"devices", {{"cpu", list}}}};
  }
  write_json(placement_file, {{"version", 2}, {"nodes", nodes_json}});

  // Live migration: SIGHUP -> prepare (background load) -> commit.
  for (const std::string& id : ids) ::kill(nodes[id]->process().pid(), SIGHUP);
  for (const std::string& id : ids) {
    int64_t version = 0;
    for (int i = 0; i < 500 && version != 2; ++i) {
      version = nodes[id]->stats()["placement_version"].get<int64_t>();
      if (version != 2) std::this_thread::sleep_for(20ms);
    }
    REQUIRE(version == 2);
    const json m = nodes[id]->stats()["migration"];
    CHECK(m["experts_loaded"].get<int64_t>() > 0);
    CHECK(m["experts_evicted"].get<int64_t>() > 0);
  }

  for (size_t n = 0; n < ids.size(); ++n) {
    const std::string& id = ids[n];
    const double after = drive_node(*nodes[id], static_cast<int>(n), 6);
    MESSAGE("node " << id << " (domain " << n << "): local-hit ratio " << before[id]
                    << " on the cold-start placement -> " << after << " after migrating to v2");
    CHECK(after > before[id] + 0.1);
    CHECK(nodes[id]->stats()["experts"]["resident"].get<int64_t>() ==
          static_cast<int64_t>(layers.size()) * n_experts / 2);
  }
}

}  // namespace dancemoe::testing
