// `dancemoe status`: the cluster at a glance -- model, placement version and
// age, nodes up/down with their local-hit ratios (last window and since
// adoption), requests and tokens served, the last placement decision with
// C(P), C(P'), T_mig and its outcome, a migration in progress with its
// progress, and the rejected-message counters.
//
//   dancemoe status [--scheduler tcp://HOST:PORT] [--timeout S] [--json] [--watch S]
//
// --watch redraws every S seconds until interrupted (a migration shows its
// progress bar); an unreachable scheduler is shown and retried, not fatal.
// The scheduler's time heads the view, each node shows when it last
// reported (figures older than one report window are marked), and tables
// are narrowed to the terminal's width.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "scheduler/cli/cluster/cluster_format.h"
#include "scheduler/cli/cluster/scheduler_client.h"
#include "scheduler/cli/cluster/status_format.h"
#include "scheduler/cli/command_registry.h"

namespace dancemoe::cli {
namespace {

using nlohmann::json;

int watch(const ClusterOptions& options, double period_s) {
  const bool terminal = ::isatty(STDOUT_FILENO) != 0;
  for (;;) {
    Result<json> reply = query_scheduler(options, "status");
    std::string text = reply.is_ok() ? format_status(*reply, terminal_width())
                                     : "scheduler unreachable: " + reply.status().message() + "\n";
    // Home and clear on a terminal; a separator line in a pipe.
    std::fputs(terminal ? "\033[H\033[2J" : "----\n", stdout);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(period_s));
  }
}

void setup(CLI::App& root, int* exit_code) {
  auto options = std::make_shared<ClusterOptions>();
  auto period_s = std::make_shared<double>(0);
  CLI::App* command = root.add_subcommand(
      "status", "Cluster summary from a running scheduler: placement, nodes, last decision");
  add_cluster_options(command, options.get());
  command
      ->add_option("--watch", *period_s,
                   "redraw every this many seconds until interrupted (0: print once)")
      ->check(CLI::Range(0.0, 3600.0));
  command->callback([options, period_s, exit_code] {
    if (*period_s > 0 && !options->json) {
      *exit_code = watch(*options, *period_s);
      return;
    }
    *exit_code = run_cluster_query("status", *options, "status", json::object(), [](const json& s) {
      return format_status(s, terminal_width());
    });
  });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
