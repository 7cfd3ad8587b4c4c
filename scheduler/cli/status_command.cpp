// `dancemoe status`: the cluster at a glance -- model, placement version and
// age, nodes up/down with their local-hit ratios (last window and since
// adoption), requests and tokens served, the last placement decision with
// C(P), C(P'), T_mig and its outcome, a migration in progress with its
// progress, and the rejected-message counters.
//
//   dancemoe status [--scheduler tcp://HOST:PORT] [--timeout S] [--json]
#include <string>

#include "scheduler/cli/command_registry.h"
#include "scheduler/cli/scheduler_client.h"
#include "scheduler/cli/status_format.h"

namespace dancemoe::cli {
namespace {

using nlohmann::json;

void setup(CLI::App& root, int* exit_code) {
  auto options = std::make_shared<ClusterOptions>();
  CLI::App* command = root.add_subcommand(
      "status", "Cluster summary from a running scheduler: placement, nodes, last decision");
  add_cluster_options(command, options.get());
  command->callback([options, exit_code] {
    *exit_code = run_cluster_query("status", *options, "status", json::object(), format_status);
  });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
