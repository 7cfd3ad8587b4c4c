#include "scheduler/placement/json_io.h"

#include <doctest/doctest.h>

namespace dancemoe::placement {
namespace {

nlohmann::json minimal() {
  return nlohmann::json::parse(R"({
    "model": {"layers": [{"experts": 2, "expert_bytes": 10}, {"experts": 3, "expert_bytes": 30}]},
    "nodes": [{"id": "a", "remote_penalty_s": 0.5,
               "devices": [{"id": "g", "expert_budget_bytes": 200, "load_bytes_per_s": 7}]}],
    "activations": {"a": [[1, 2], [3, 4, 5]]}})");
}

TEST_CASE("placement json: reads a problem, with horizon 300 and window = horizon by default") {
  Result<Problem> p = problem_from_json(minimal());
  REQUIRE(p.is_ok());
  CHECK(p->model.n_experts_total() == 5);
  CHECK(p->model.expert_bytes(3) == 30);
  CHECK(p->cluster.nodes[0].devices[0].load_bytes_per_s == 7);
  CHECK(p->activations.counts[0] == std::vector<double>{1, 2, 3, 4, 5});
  CHECK(p->horizon_s == 300);
  CHECK(p->activations.window_s == 300);
  auto j = minimal();
  j["horizon_s"] = 60;
  CHECK(problem_from_json(j)->activations.window_s == 60);
  j["window_s"] = 15;
  CHECK(problem_from_json(j)->activations.window_s == 15);
}

TEST_CASE("placement json: errors name the path and the expectation") {
  auto j = minimal();
  j["model"]["layers"][1].erase("expert_bytes");
  CHECK(problem_from_json(j).status().message() ==
        "model.layers[1].expert_bytes: missing required field");
  j = minimal();
  j["activations"]["z"] = nlohmann::json::array();
  CHECK(problem_from_json(j).status().message().find("no node with id 'z'") != std::string::npos);
  j = minimal();
  j["activations"].erase("a");
  CHECK(problem_from_json(j).status().message().find("activations.a: missing") !=
        std::string::npos);
  j = minimal();
  j["horizon_s"] = 0;
  CHECK(problem_from_json(j).status().message().find("horizon_s") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::placement
