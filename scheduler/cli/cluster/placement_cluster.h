// The cluster sub-commands of `dancemoe placement` (show, propose, round,
// apply); see placement_cluster.cpp for their usage. Called by
// placement_command.cpp, which owns the `placement` command group.
#pragma once

#include <CLI/CLI.hpp>

namespace dancemoe::cli {

void add_cluster_placement_commands(CLI::App* group, int* exit_code);

}  // namespace dancemoe::cli
