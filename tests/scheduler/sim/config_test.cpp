#include "scheduler/sim/config.h"

#include <doctest/doctest.h>

#include <fstream>

#include "tests/support/paths.h"

namespace dancemoe::sim {
namespace {

nlohmann::json minimal() {
  return nlohmann::json::parse(R"({
    "model": {"layers": 2, "experts": 8, "top_k": 2, "expert_bytes": 1000},
    "nodes": [{"id": "a", "task": 0, "devices": [{"id": "g", "memory_fraction": 0.75}]},
              {"id": "b", "task": "1", "devices": [{"id": "g", "expert_budget_bytes": 9000}]}],
    "workload": {"kind": "synthetic", "tasks": 2}})");
}

TEST_CASE("sim config: defaults, memory fractions and task indices") {
  Result<SimConfig> c = sim_config_from_json(minimal(), ".");
  REQUIRE(c.is_ok());
  CHECK(c->nodes[0].devices[0].expert_budget_bytes == 12000);  // 0.75 of 16 x 1000
  CHECK(c->nodes[1].devices[0].expert_budget_bytes == 9000);
  CHECK(c->nodes[0].task == "0");
  CHECK(c->link.bandwidth_bytes_per_s == 62.5e6);
  CHECK(c->placement.period_s == 0);
  CHECK(c->placement.policies.size() == 6);
}

TEST_CASE("sim config: errors name the field") {
  auto j = minimal();
  j["nodes"][1]["devices"][0]["load_bytes_per_s"] = 0;
  CHECK(sim_config_from_json(j, ".").status().message().find(
            "nodes[1].devices[0].load_bytes_per_s: expected a finite number > 0") !=
        std::string::npos);
  j = minimal();
  j["model"].erase("top_k");
  CHECK(sim_config_from_json(j, ".").status().message() == "model.top_k: missing required field");
  j = minimal();
  j["nodes"][0]["task"] = 5;
  CHECK(sim_config_from_json(j, ".").status().message().find("not a synthetic task index") !=
        std::string::npos);
  j = minimal();
  j["placement"] = {{"policies", {"optimal", "magic"}}};
  CHECK(sim_config_from_json(j, ".").status().message().find("unknown policy 'magic'") !=
        std::string::npos);
  j = minimal();
  j["shifts"] = {{{"at_s", 10}, {"node", "z"}, {"task", "0"}}};
  CHECK(sim_config_from_json(j, ".").status().message().find("no node 'z'") != std::string::npos);
  j = minimal();
  j["workload"] = {{"kind", "replay"}};
  CHECK(sim_config_from_json(j, ".").status().message().find("workload.kind") != std::string::npos);
}

TEST_CASE("sim config: task mixtures join task indices with '+'") {
  auto j = minimal();
  j["nodes"][0]["task"] = "0+1";
  CHECK(sim_config_from_json(j, ".").is_ok());
  j["nodes"][0]["task"] = "0+2";
  CHECK(sim_config_from_json(j, ".").status().message().find("'0+2' is not a synthetic task") !=
        std::string::npos);
  CHECK(task_components("coding+math") == std::vector<std::string>{"coding", "math"});
  CHECK(task_components("math") == std::vector<std::string>{"math"});
}

TEST_CASE("sim config: a relative trace path is resolved against the config's directory") {
  auto j = minimal();
  j["workload"] = {{"kind", "trace"}, {"path", "tokens.csv"}};
  j["nodes"][0]["task"] = "coding";
  j["nodes"][1]["task"] = "math";
  Result<SimConfig> c = sim_config_from_json(j, "/data/run");
  REQUIRE(c.is_ok());
  CHECK(c->trace_workload);
  CHECK(c->trace.path == std::filesystem::path("/data/run/tokens.csv"));
}

TEST_CASE("sim config: every committed study config parses") {
  const auto dir = testing::source_dir() / "docs" / "placement" / "configs";
  int parsed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream file(entry.path());
    nlohmann::json j = nlohmann::json::parse(file);
    Result<SimConfig> c = sim_config_from_json(j, entry.path().parent_path());
    CAPTURE(entry.path().string());
    CHECK_MESSAGE(c.is_ok(), c.status().to_string());
    ++parsed;
  }
  CHECK(parsed >= 1);
}

}  // namespace
}  // namespace dancemoe::sim
