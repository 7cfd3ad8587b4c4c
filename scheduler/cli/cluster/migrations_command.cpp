// `dancemoe migrations`: recent two-phase migrations (versions, trigger,
// bytes, duration, outcome and why) and the placement decisions behind
// them (including rejected ones, with C(P), C(P') and T_mig).
//
//   dancemoe migrations [--limit N] [--scheduler tcp://HOST:PORT] [--timeout S] [--json]
#include <string>

#include "scheduler/cli/cluster/cluster_format.h"
#include "scheduler/cli/cluster/scheduler_client.h"
#include "scheduler/cli/command_registry.h"

namespace dancemoe::cli {
namespace {

using nlohmann::json;

std::string format_migrations(const json& reply) {
  const Palette p{use_colour()};
  std::string out;
  std::vector<std::vector<std::string>> rows = {
      {"ID", "VERSIONS", "TRIGGER", "NODES", "BYTES", "DURATION", "OUTCOME", "REASON"}};
  for (const json& m : reply["migrations"]) {
    const std::string outcome = m.value("outcome", std::string());
    std::string shown = outcome == "aborted" ? p.warn(outcome) : outcome;
    if (m.contains("progress")) shown += " (" + ratio_text(m["progress"]) + " ready)";
    rows.push_back(
        {std::to_string(m.value("id", 0)),
         std::to_string(m.value("from_version", 0)) + " -> " +
             std::to_string(m.value("to_version", 0)),
         m.value("trigger", std::string()), std::to_string(m.value("n_nodes", 0)),
         bytes_text(m.value("bytes", 0.0)),
         m["duration_s"].is_number() ? duration_text(m["duration_s"].get<double>()) : "-", shown,
         m.value("reason", std::string())});
  }
  out += p.bold("migrations") + "\n";
  out += rows.size() > 1 ? table(rows, "  ") : "  none yet\n";
  out += p.bold("decisions") + "\n";
  if (reply["decisions"].empty()) out += "  none yet\n";
  for (const json& d : reply["decisions"]) out += "  " + decision_text(d) + "\n";
  return out;
}

void setup(CLI::App& root, int* exit_code) {
  auto options = std::make_shared<ClusterOptions>();
  auto limit = std::make_shared<int>(20);
  CLI::App* command = root.add_subcommand(
      "migrations", "Recent migrations and placement decisions of a running scheduler");
  command->add_option("--limit", *limit, "How many of each to show")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  add_cluster_options(command, options.get());
  command->callback([options, limit, exit_code] {
    *exit_code = run_cluster_query("migrations", *options, "migrations", json{{"limit", *limit}},
                                   format_migrations);
  });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
