// Sub-commands of the `dancemoe` client CLI register themselves here, one
// file per command (scheduler/cli/<name>_command.cpp), so that adding a
// command never touches main.cpp. Registration happens during static
// initialisation of the executable's own objects; not thread-safe, not needed.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace dancemoe::cli {

// Adds a sub-command to `root`. The command's callback stores its process
// exit code in *exit_code (0 ok, 1 runtime failure, 2 bad usage or input).
using CommandSetup = std::function<void(CLI::App& root, int* exit_code)>;

bool register_command(CommandSetup setup);

void add_registered_commands(CLI::App& root, int* exit_code);

}  // namespace dancemoe::cli

#define DMOE_CLI_CONCAT_INNER(a, b) a##b
#define DMOE_CLI_CONCAT(a, b) DMOE_CLI_CONCAT_INNER(a, b)
#define DMOE_REGISTER_CLI_COMMAND(setup_fn)                                            \
  static const bool DMOE_CLI_CONCAT(dmoe_cli_registered_, __LINE__) [[maybe_unused]] = \
      ::dancemoe::cli::register_command(setup_fn)
