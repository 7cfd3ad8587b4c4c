// `dancemoe-sim`: runs one simulated scenario (scheduler/sim/config.h) under
// each of its placement policies and writes CSV tables and SVG plots
// (scheduler/sim/study.h).
//
//   dancemoe-sim --config docs/placement/configs/paper_dsv2lite_30.json --out out/sim
//                [--policy NAME]... [--duration S] [--jobs N]
//
// Exit codes: 0 ok, 2 bad config or arguments, 1 failure while running.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/base/json_nesting.h"
#include "scheduler/sim/config.h"
#include "scheduler/sim/study.h"

int main(int argc, char** argv) {
  CLI::App app{
      "dancemoe-sim: event-driven simulation of a DanceMoE cluster; compares placement "
      "policies on one scenario and writes CSV tables and SVG plots."};
  app.set_version_flag("--version", std::string("dancemoe-sim 0.1.0"));
  std::string config_path, out_dir = "out/sim";
  std::vector<std::string> policies;
  double duration_s = 0;
  int jobs = 1;
  app.add_option("--config", config_path, "Scenario JSON (see scheduler/sim/config.h)")->required();
  app.add_option("--out", out_dir, "Directory for summary.csv, timeline.csv and the SVG plots")
      ->capture_default_str();
  app.add_option("--policy", policies, "Run only these policies (repeatable)");
  app.add_option("--duration", duration_s, "Override duration_s");
  app.add_option("--jobs", jobs, "Policies simulated in parallel")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::ifstream file(config_path);
  if (!file) {
    std::fprintf(stderr, "dancemoe-sim: %s: cannot open the config\n", config_path.c_str());
    return 2;
  }
  std::stringstream text;
  text << file.rdbuf();
  nlohmann::json json;
  if (auto deep = dancemoe::check_json_nesting(text.str(), config_path); !deep.is_ok()) {
    std::fprintf(stderr, "dancemoe-sim: %s\n", deep.message().c_str());
    return 2;
  }
  try {
    json = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {  // syntax, or a number beyond a double
    std::fprintf(stderr, "dancemoe-sim: %s: not valid JSON: %s\n", config_path.c_str(), e.what());
    return 2;
  }
  auto config =
      dancemoe::sim::sim_config_from_json(json, std::filesystem::path(config_path).parent_path());
  if (!config.is_ok()) {
    std::fprintf(stderr, "dancemoe-sim: %s: %s\n", config_path.c_str(),
                 config.status().message().c_str());
    return 2;
  }
  if (!policies.empty()) config->placement.policies = policies;
  if (duration_s > 0) config->duration_s = duration_s;
  if (auto status = dancemoe::sim::validate_sim_config(*config); !status.is_ok()) {
    std::fprintf(stderr, "dancemoe-sim: %s\n", status.message().c_str());
    return 2;
  }
  auto study = dancemoe::sim::run_study(*config, jobs);
  if (!study.is_ok()) {
    std::fprintf(stderr, "dancemoe-sim: %s\n", study.status().to_string().c_str());
    return study.status().code() == dancemoe::StatusCode::kInternal ? 1 : 2;
  }
  if (auto status = dancemoe::sim::write_study(*study, out_dir); !status.is_ok()) {
    std::fprintf(stderr, "dancemoe-sim: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("%s", dancemoe::sim::format_summary(*study).c_str());
  std::printf(
      "wrote %s/{summary.csv,timeline.csv,replacements.csv,latency.svg,"
      "node_latency.svg,local_ratio.svg,local_steps.svg}\n",
      out_dir.c_str());
  return 0;
}
