// `dancemoe doctor node FLAGS...` / `dancemoe doctor scheduler FLAGS...`:
// checks this machine for a node or a scheduler started with FLAGS (the
// daemon's own flags, e.g. those of /etc/dancemoe/node-NAME.env) and prints
// one line per check with what to do about each failure. The daemon's own
// binary does the checking (`dancemoe-node --doctor`, `dancemoe-scheduler
// --doctor`), so the flags mean exactly what they will mean at start;
// this command runs it in place and returns its exit code (0 nothing
// failed, 1 a check failed).
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "scheduler/cli/cli_support.h"
#include "scheduler/cli/command_registry.h"

namespace dancemoe::cli {
namespace {

int run(const std::string& role, const std::vector<std::string>& flags) {
  Result<std::filesystem::path> binary = locate_binary("dancemoe-" + role);
  if (!binary.is_ok()) return report_failure("doctor", binary.status());
  std::vector<std::string> args = {binary->string(), "--doctor"};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execv(argv[0], argv.data());
  return report_failure("doctor", unavailable(binary->string() + ": " + std::strerror(errno)));
}

void setup(CLI::App& root, int* exit_code) {
  CLI::App* cmd = root.add_subcommand(
      "doctor",
      "Check this machine for a node or a scheduler: `dancemoe doctor node --model DIR --node-id "
      "ID --scheduler tcp://HOST:PORT ...` or `dancemoe doctor scheduler --config FILE` (the "
      "daemon's own flags); one line per check, with what to do about each failure");
  auto role = std::make_shared<std::string>();
  cmd->add_option("role", *role, "node or scheduler")
      ->required()
      ->check(CLI::IsMember({"node", "scheduler"}));
  // Everything after the role is the daemon's, passed on as it is.
  cmd->prefix_command();
  cmd->callback([cmd, role, exit_code] { *exit_code = run(*role, cmd->remaining()); });
}

DMOE_REGISTER_CLI_COMMAND(setup);

}  // namespace
}  // namespace dancemoe::cli
