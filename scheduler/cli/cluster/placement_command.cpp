// `dancemoe placement ...`: placement tools that need no running cluster
// (solve, policies); the cluster sub-commands (show, propose, round, apply)
// are in placement_cluster.cpp.
//
//   dancemoe placement solve --input FILE.json --policy NAME [--current PLACEMENT.json]
//       Solves one placement problem (format: scheduler/placement/json_io.h)
//       and prints one JSON object on stdout:
//         {"version": 1, "nodes": {"a": {"devices": {"gpu0": [[layer, expert], ...]}}},
//          "policy": ..., "method": ..., "proxy_cost": ..., "proxy_cost_s": ..., "local_hit_ratio":
//          ..., "solve_ms": ..., "gate": {"cost_current_s": ..., "cost_new_s": ..., "migration_s":
//          ...,
//                   "adopt": true|false}}            (gate only with --current)
//       proxy_cost counts remote activations (the paper's Eq. 2); proxy_cost_s
//       is C(P) in seconds over horizon_s; solve_ms covers validation, the
//       policy and the result check. With --current the policy also sees the
//       placement in force (migration-aware weights, experts kept on their
//       device) and the gate compares it with the new one. A current
//       placement that leaves an expert uncovered is adopted regardless
//       (coverage repair).
//       The placement is in the cluster's one JSON form
//       (common/placement/placement_json.h), so the whole object is accepted
//       as --current and by `dancemoe-node --placement` once endpoints are added.
//       Errors go to stderr and name the file and field; exit code 2 for bad
//       or infeasible input, 1 for an internal failure.
//   dancemoe placement policies
//       Lists the policies with a one-line summary each.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/base/json_field.h"
#include "common/placement/placement_json.h"
#include "scheduler/cli/cluster/placement_cluster.h"
#include "scheduler/cli/command_registry.h"
#include "scheduler/placement/cluster_form.h"
#include "scheduler/placement/costs.h"
#include "scheduler/placement/json_io.h"
#include "scheduler/placement/policy.h"

namespace dancemoe::cli {
namespace {

using placement::Placement;
using placement::Problem;

struct SolveOptions {
  std::string input;
  std::string policy;
  std::string current;
};

int fail(const std::string& message, int code) {
  std::fprintf(stderr, "dancemoe placement solve: %s\n", message.c_str());
  return code;
}

int exit_code_for(const Status& status) { return status.code() == StatusCode::kInternal ? 1 : 2; }

int run_solve(const SolveOptions& options) {
  if (placement::find_policy(options.policy) == nullptr) {
    return fail("--policy: unknown placement policy '" + options.policy +
                    "'; known policies: " + placement::policy_names(),
                2);
  }
  Result<nlohmann::json> input = read_json_file(options.input);
  if (!input.is_ok()) return fail(input.status().message(), 2);
  Result<Problem> problem = placement::problem_from_json(*input);
  if (!problem.is_ok()) return fail(options.input + ": " + problem.status().message(), 2);
  if (!options.current.empty()) {
    Result<ClusterPlacement> read = read_placement_file(options.current, Endpoints::kOptional);
    if (!read.is_ok()) return fail(read.status().message(), 2);
    Result<Placement> current = placement::from_cluster_placement(*problem, *read);
    if (!current.is_ok()) return fail(options.current + ": " + current.status().message(), 2);
    problem->current = std::move(*current);
  }

  const auto t0 = std::chrono::steady_clock::now();
  Result<Placement> solved = placement::solve(options.policy, *problem);
  const auto t1 = std::chrono::steady_clock::now();
  if (!solved.is_ok()) {
    const std::string where =
        solved.status().code() == StatusCode::kInternal ? std::string() : options.input + ": ";
    return fail(where + solved.status().to_string(), exit_code_for(solved.status()));
  }

  const placement::PlacementCosts costs = placement::evaluate_costs(*problem, *solved);
  // The placement in its one JSON form, the solve's figures beside it.
  nlohmann::ordered_json out =
      placement_to_json(placement::to_cluster_placement(*problem, *solved));
  out["policy"] = options.policy;
  out["method"] = solved->method;
  out["proxy_cost"] = costs.proxy_cost;
  out["proxy_cost_s"] = costs.proxy_cost_s;
  out["local_hit_ratio"] = costs.local_hit_ratio;
  out["solve_ms"] = std::chrono::duration<double, std::milli>(t1 - t0).count();
  if (problem->current) {
    const placement::GateDecision gate =
        placement::evaluate_gate(*problem, *problem->current, *solved);
    out["gate"] = {{"cost_current_s", gate.cost_current_s},
                   {"cost_new_s", gate.cost_new_s},
                   {"migration_s", gate.migration_s},
                   {"adopt", gate.adopt}};
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

void setup(CLI::App& root, int* exit_code) {
  CLI::App* group = root.add_subcommand(
      "placement",
      "Expert placement: the committed map of a running cluster (no sub-command), "
      "propose/round/apply on it, and offline tools (solve, policies)");
  group->require_subcommand(0, 1);
  add_cluster_placement_commands(group, exit_code);

  auto options = std::make_shared<SolveOptions>();
  CLI::App* solve = group->add_subcommand(
      "solve", "Solve a placement problem from a JSON file and print the placement as JSON");
  solve->add_option("--input", options->input, "Problem JSON (model, nodes, activations)")
      ->required();
  solve->add_option("--policy", options->policy, "Policy: " + placement::policy_names())
      ->required();
  solve->add_option("--current", options->current,
                    "Placement in force (JSON); adds the migration gate to the output");
  solve->callback([options, exit_code] { *exit_code = run_solve(*options); });

  CLI::App* list = group->add_subcommand("policies", "List the placement policies");
  list->callback([exit_code] {
    for (const placement::PolicyInfo& policy : placement::all_policies()) {
      std::printf("%-18s %s\n", std::string(policy.name).c_str(),
                  std::string(policy.summary).c_str());
    }
    *exit_code = 0;
  });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
