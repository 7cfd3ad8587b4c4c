// The cluster half of `dancemoe placement` (the offline tools `solve` and
// `policies` are in placement_command.cpp):
//
//   dancemoe placement [--layer L]           the committed placement as a map:
//                                            per layer, one row per node, one
//                                            column per expert (held or not),
//                                            and the number of copies
//   dancemoe placement propose --policy NAME dry run: the candidate, what would
//                                            move, C(P), C(P'), T_mig, adopt?
//   dancemoe placement round [--policy NAME] a gated placement round now
//   dancemoe placement apply [--policy NAME | --file PLACEMENT.json]
//                                            operator override: adopt without the
//                                            gate (recorded as "operator")
//
// All take --scheduler, --timeout, --cluster-id and --json. The --file
// format is the one JSON form of a placement (common/placement/
// placement_json.h; experts as [layer, expert] in model layer numbers), which
// `dancemoe placement --json` prints, so a placement can be dumped, edited
// and applied.
#include "scheduler/cli/cluster/placement_cluster.h"

#include <cstdio>
#include <map>

#include "common/placement/placement_json.h"
#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/cluster/cluster_format.h"
#include "scheduler/cli/cluster/scheduler_client.h"

namespace dancemoe::cli {
namespace {

using nlohmann::json;

std::string format_map(const json& p) {
  const Palette pal{use_colour()};
  std::string out = pal.bold("placement version " + std::to_string(p.value("version", 0))) + " (" +
                    p.value("policy", std::string()) + ", " + p.value("trigger", std::string()) +
                    "; " + p.value("method", std::string()) + ")\n";
  std::vector<std::string> ids;
  std::map<std::string, size_t> colour;
  for (const auto& [id, node] : p["nodes"].items()) {
    colour[id] = ids.size();
    ids.push_back(id);
  }
  size_t width = 6;
  for (const std::string& id : ids) width = std::max(width, id.size());
  const std::string held = pal.enabled ? "\u2588" : "#";
  const std::string empty = pal.enabled ? "\u00b7" : ".";
  for (const json& layer : p["layers"]) {
    const json& holders = layer["holders"];
    const size_t n_experts = holders.size();
    out += "\n" + pal.bold("layer " + std::to_string(layer.value("layer", 0))) + "\n";
    std::string tens(width + 2, ' '), ones(width + 2, ' ');
    for (size_t e = 0; e < n_experts; ++e) {
      tens += e % 10 == 0 ? std::to_string((e / 10) % 10) : " ";
      ones += std::to_string(e % 10);
    }
    if (n_experts > 10) out += pal.dim(tens) + "\n";
    out += pal.dim(ones) + "\n";
    for (const std::string& id : ids) {
      std::string row = pal.node(colour[id], id) + std::string(width + 2 - id.size(), ' ');
      for (size_t e = 0; e < n_experts; ++e) {
        bool has = false;
        for (const json& h : holders[e]) has = has || h.get<std::string>() == id;
        row += has ? pal.node(colour[id], held) : pal.dim(empty);
      }
      out += row + "\n";
    }
    std::string copies = "copies" + std::string(width + 2 - 6, ' ');
    for (size_t e = 0; e < n_experts; ++e) {
      const size_t n = holders[e].size();
      copies += n == 0 ? pal.warn("!") : n < 10 ? std::to_string(n) : "+";
    }
    out += copies + "\n";
  }
  return out;
}

std::string format_propose(const json& r) {
  const Palette pal{use_colour()};
  const json& gate = r["gate"];
  std::string out = pal.bold("candidate  ") + r.value("policy", std::string()) + " (" +
                    r.value("method", std::string()) + "), solved in " +
                    seconds_text(r.value("solve_ms", 0.0) / 1000.0) + "\n";
  out += pal.bold("statistics ") + r.value("note", std::string()) + ", window " +
         duration_text(r.value("window_s", 0.0)) + ", horizon " +
         duration_text(r.value("horizon_s", 0.0)) + "\n";
  out += pal.bold("gate       ") + "C(P) = " + seconds_text(gate.value("cost_current_s", 0.0)) +
         ", C(P') = " + seconds_text(gate.value("cost_new_s", 0.0)) +
         ", T_mig = " + seconds_text(gate.value("migration_s", 0.0)) + ": " +
         (gate.value("adopt", false) ? "would adopt" : "would reject") +
         (gate.value("coverage_repair", false) ? " (coverage repair: gate bypassed)" : "") + "\n";
  out += pal.bold("local hits ") + ratio_text(r["local_hit_ratio_current"]) + " -> " +
         ratio_text(r["local_hit_ratio_new"]) + "\n";
  out += pal.bold("moves      ") + bytes_text(r.value("migration_bytes", 0.0)) + " to load\n";
  std::vector<std::vector<std::string>> rows = {{"NODE", "ADD", "REMOVE", "KEEP", "LOAD"}};
  for (const json& m : r["moves"]) {
    rows.push_back({m.value("node", std::string()), std::to_string(m.value("added", 0)),
                    std::to_string(m.value("removed", 0)), std::to_string(m.value("kept", 0)),
                    bytes_text(m.value("load_bytes", 0.0))});
  }
  out += table(rows, "  ");
  return out;
}

// Rounds and applies answer with a decision; an "error" outcome (e.g. not
// enough memory for coverage) is a failure of the command.
int run_decision(const std::string& command, const ClusterOptions& options, const std::string& what,
                 const json& args);

std::string format_decision(const json& d) {
  std::string out = decision_text(d) + "\n";
  if (d.value("outcome", std::string()) == "adopted") {
    out += "migration to version " + std::to_string(d.value("version", 0)) +
           " started; follow it with `dancemoe status` or `dancemoe migrations`\n";
  }
  return out;
}

int run_decision(const std::string& command, const ClusterOptions& options, const std::string& what,
                 const json& args) {
  Result<json> reply = query_scheduler(options, what, args);
  if (!reply.is_ok()) return report_failure(command, reply.status());
  std::fputs(options.json
                 ? (reply->dump(2, ' ', false, json::error_handler_t::replace) + "\n").c_str()
                 : format_decision(*reply).c_str(),
             stdout);
  if (reply->value("outcome", std::string()) == "error") {
    std::fprintf(stderr, "dancemoe %s: the round failed: %s\n", command.c_str(),
                 reply->value("message", std::string()).c_str());
    return 1;
  }
  return 0;
}

struct ShowOptions {
  ClusterOptions cluster;
  int layer = -1;
};

struct PolicyOptions {
  ClusterOptions cluster;
  std::string policy;
  std::string file;
};

}  // namespace

void add_cluster_placement_commands(CLI::App* group, int* exit_code) {
  auto show = std::make_shared<ShowOptions>();
  group->add_option("--layer", show->layer, "Show only this (model) layer")
      ->check(CLI::NonNegativeNumber);
  add_cluster_options(group, &show->cluster);
  group->callback([group, show, exit_code] {
    if (!group->get_subcommands().empty()) return;  // a subcommand ran
    json args = json::object();
    if (show->layer >= 0) args["layer"] = show->layer;
    *exit_code = run_cluster_query("placement", show->cluster, "placement", args, format_map);
  });

  auto propose = std::make_shared<PolicyOptions>();
  CLI::App* p = group->add_subcommand(
      "propose", "Dry run on a running scheduler: the candidate placement, moves and gate");
  p->add_option("--policy", propose->policy, "Policy (default: the scheduler's)");
  add_cluster_options(p, &propose->cluster);
  p->callback([propose, exit_code] {
    json args = json::object();
    if (!propose->policy.empty()) args["policy"] = propose->policy;
    *exit_code =
        run_cluster_query("placement propose", propose->cluster, "propose", args, format_propose);
  });

  auto round = std::make_shared<PolicyOptions>();
  CLI::App* r = group->add_subcommand("round", "Run a gated placement round now");
  r->add_option("--policy", round->policy, "Policy (default: the scheduler's)");
  add_cluster_options(r, &round->cluster);
  r->callback([round, exit_code] {
    json args = json::object();
    if (!round->policy.empty()) args["policy"] = round->policy;
    *exit_code = run_decision("placement round", round->cluster, "round", args);
  });

  auto apply = std::make_shared<PolicyOptions>();
  CLI::App* a = group->add_subcommand(
      "apply", "Operator override: adopt a policy's placement or a placement file, no gate");
  auto* policy_option =
      a->add_option("--policy", apply->policy, "Policy (default: the scheduler's)");
  a->add_option("--file", apply->file, "Placement JSON (as printed by `dancemoe placement --json`)")
      ->excludes(policy_option);
  add_cluster_options(a, &apply->cluster);
  a->callback([apply, exit_code] {
    json args = json::object();
    if (!apply->policy.empty()) args["policy"] = apply->policy;
    if (!apply->file.empty()) {
      // Read here so that a bad file is named before anything is sent.
      Result<ClusterPlacement> placement = read_placement_file(apply->file, Endpoints::kOptional);
      if (!placement.is_ok()) {
        *exit_code = report_failure("placement apply", placement.status());
        return;
      }
      args["placement"] = placement_to_json(*placement);
    }
    *exit_code = run_decision("placement apply", apply->cluster, "apply", args);
  });
}

}  // namespace dancemoe::cli
