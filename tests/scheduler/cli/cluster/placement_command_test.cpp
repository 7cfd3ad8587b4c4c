// `dancemoe placement solve` as a process: exact output format, the gate,
// and errors that name the field with exit code 2.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/paths.h"

namespace dancemoe {
namespace {

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

Run run_cli(const testing::TempDir& dir, const std::string& args) {
  const auto out = dir.path() / "stdout.txt", err = dir.path() / "stderr.txt";
  const std::string command = std::string(DMOE_CLI_PATH) + " " + args + " > '" + out.string() +
                              "' 2> '" + err.string() + "'";
  const int status = std::system(command.c_str());
  Run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = slurp(out);
  run.err = slurp(err);
  return run;
}

nlohmann::json problem_json() {
  return nlohmann::json::parse(R"({
    "model": {"layers": [{"experts": 4, "expert_bytes": 1000}, {"experts": 4, "expert_bytes": 1000}]},
    "nodes": [
      {"id": "a", "remote_penalty_s": 0.004,
       "devices": [{"id": "gpu0", "expert_budget_bytes": 4000, "load_bytes_per_s": 1e6}]},
      {"id": "b", "remote_penalty_s": 0.010,
       "devices": [{"id": "gpu0", "expert_budget_bytes": 2000, "load_bytes_per_s": 1e6},
                   {"id": "gpu1", "expert_budget_bytes": 2500, "load_bytes_per_s": 1e6}]}],
    "activations": {"a": [[8, 0, 0, 0], [1, 1, 1, 1]], "b": [[1, 1, 1, 1], [4, 2, 1, 1]]},
    "horizon_s": 300, "window_s": 100})");
}

std::string write(const testing::TempDir& dir, const std::string& name, const nlohmann::json& j) {
  const auto path = dir.path() / name;
  std::ofstream(path) << j.dump();
  return "'" + path.string() + "'";
}

TEST_CASE("cli placement solve: prints one JSON object in the documented format") {
  testing::TempDir dir("cli-placement");
  const std::string input = write(dir, "in.json", problem_json());
  const Run run = run_cli(dir, "placement solve --input " + input + " --policy optimal");
  REQUIRE(run.exit_code == 0);
  CHECK(run.err.empty());
  const auto out = nlohmann::json::parse(run.out);
  CHECK(out["policy"] == "optimal");
  CHECK(out["method"].get<std::string>().find("exact") != std::string::npos);
  CHECK(out.contains("solve_ms"));
  CHECK_FALSE(out.contains("gate"));
  // Every node and device appears; every expert is covered; devices fit.
  const auto& nodes = out["nodes"];
  CHECK(nodes["a"]["devices"]["gpu0"].size() == 4);
  CHECK(nodes["b"]["devices"]["gpu0"].size() == 2);
  CHECK(nodes["b"]["devices"]["gpu1"].size() == 2);
  std::set<std::pair<int, int>> covered;
  for (const auto& [node, placed] : nodes.items()) {
    for (const auto& [device, list] : placed["devices"].items()) {
      for (const auto& pair : list) covered.insert({pair[0].get<int>(), pair[1].get<int>()});
    }
  }
  CHECK(covered.size() == 8);
  // The worked example of dancemoe_test.cpp: 6 activations remote; in
  // seconds, a misses 2 at 0.004 and b misses 4 at 0.010, times H/window = 3.
  CHECK(out["proxy_cost"].get<double>() == doctest::Approx(6));
  CHECK(out["proxy_cost_s"].get<double>() == doctest::Approx(3 * (2 * 0.004 + 4 * 0.010)));
  CHECK(out["local_hit_ratio"].get<double>() == doctest::Approx(18.0 / 24.0));
}

TEST_CASE("cli placement solve: --current adds the gate with its three numbers") {
  testing::TempDir dir("cli-placement");
  const std::string input = write(dir, "in.json", problem_json());
  const Run first = run_cli(dir, "placement solve --input " + input + " --policy uniform");
  REQUIRE(first.exit_code == 0);
  // The whole output object is accepted as --current.
  const std::string current = write(dir, "current.json", nlohmann::json::parse(first.out));
  const Run second =
      run_cli(dir, "placement solve --input " + input + " --policy optimal --current " + current);
  REQUIRE(second.exit_code == 0);
  const auto gate = nlohmann::json::parse(second.out)["gate"];
  CHECK(gate.size() == 4);
  const double current_s = gate["cost_current_s"], new_s = gate["cost_new_s"],
               migration = gate["migration_s"];
  CHECK(new_s < current_s);
  CHECK(migration > 0);
  CHECK(gate["adopt"].get<bool>() == (new_s + migration < current_s));
  // The same placement as current: nothing to migrate, not adopted.
  const std::string same = write(dir, "same.json", nlohmann::json::parse(second.out));
  const Run third =
      run_cli(dir, "placement solve --input " + input + " --policy optimal --current " + same);
  REQUIRE(third.exit_code == 0);
  const auto gate3 = nlohmann::json::parse(third.out)["gate"];
  CHECK(gate3["migration_s"].get<double>() == 0.0);
  CHECK(gate3["adopt"].get<bool>() == false);
}

TEST_CASE("cli placement solve: bad input names the field and exits with 2") {
  testing::TempDir dir("cli-placement");
  auto bad = problem_json();
  bad["nodes"][1]["devices"][0]["expert_budget_bytes"] = "lots";
  Run run =
      run_cli(dir, "placement solve --input " + write(dir, "bad.json", bad) + " --policy optimal");
  CHECK(run.exit_code == 2);
  CHECK(run.out.empty());
  CHECK(run.err.find("nodes[1].devices[0].expert_budget_bytes") != std::string::npos);

  bad = problem_json();
  bad["activations"]["a"][1] = {1, 1, 1};
  run =
      run_cli(dir, "placement solve --input " + write(dir, "bad.json", bad) + " --policy optimal");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("activations.a[1]: expected an array of 4 counts") != std::string::npos);

  bad = problem_json();
  bad["activations"]["a"][0][2] = -4;
  run =
      run_cli(dir, "placement solve --input " + write(dir, "bad.json", bad) + " --policy optimal");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("activations.a[0][2]") != std::string::npos);

  run = run_cli(dir, "placement solve --input " + write(dir, "in.json", problem_json()) +
                         " --policy fastest");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("unknown placement policy 'fastest'") != std::string::npos);

  std::ofstream(dir.path() / "broken.json") << "{\"model\": ";
  run = run_cli(dir, "placement solve --input '" + (dir.path() / "broken.json").string() +
                         "' --policy optimal");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("malformed JSON") != std::string::npos);
}

TEST_CASE("cli placement solve: a 100k-deep input is an error naming the file, not a crash") {
  testing::TempDir dir("cli_solve_deep");
  const auto path = dir.path() / "deep.json";
  std::ofstream(path) << R"({"model": )" << std::string(100000, '[') << std::string(100000, ']')
                      << "}";
  const Run run = run_cli(dir, "placement solve --input '" + path.string() + "' --policy optimal");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("deep.json: JSON nested deeper than 128 levels") != std::string::npos);
}

TEST_CASE("cli placement solve: infeasible memory says how much is missing") {
  testing::TempDir dir("cli-placement");
  auto small = problem_json();
  small["nodes"][0]["devices"][0]["expert_budget_bytes"] = 1000;
  small["nodes"][1]["devices"][1]["expert_budget_bytes"] = 1000;
  const Run run = run_cli(
      dir, "placement solve --input " + write(dir, "small.json", small) + " --policy dancemoe");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("missing 4 expert slots (4000 bytes)") != std::string::npos);
}

TEST_CASE("cli placement solve: a current placement naming an unknown device is refused") {
  testing::TempDir dir("cli-placement");
  const std::string input = write(dir, "in.json", problem_json());
  const auto current = nlohmann::json::parse(R"({"placement": {"a": {"gpu7": [[0, 0]]}}})");
  const Run run = run_cli(dir, "placement solve --input " + input + " --policy optimal --current " +
                                   write(dir, "cur.json", current));
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("placement.a.gpu7: node 'a' has no device 'gpu7'") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe
