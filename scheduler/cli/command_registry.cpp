#include "scheduler/cli/command_registry.h"

#include <vector>

namespace dancemoe::cli {
namespace {

std::vector<CommandSetup>& registry() {
  static std::vector<CommandSetup> commands;
  return commands;
}

}  // namespace

bool register_command(CommandSetup setup) {
  registry().push_back(std::move(setup));
  return true;
}

void add_registered_commands(CLI::App& root, int* exit_code) {
  for (const CommandSetup& setup : registry()) setup(root, exit_code);
}

}  // namespace dancemoe::cli
