// Small helpers shared by the `dancemoe` sub-commands: reporting a failed
// Status, parsing common option values, finding the other executables.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/base/status.h"

namespace dancemoe::cli {

// Prints "dancemoe <command>: <message>" to stderr and returns the exit code
// for the status: 2 for bad input (invalid_argument, not_found), 1 otherwise.
int report_failure(const std::string& command, const Status& status);

// Parses "3,17,250" into ids; an error names the offending item.
Result<std::vector<int32_t>> parse_id_list(const std::string& text);

// A dancemoe executable: next to the running `dancemoe` (installed layout),
// in the build tree's scheduler/ or edge_node/ folder, else on PATH.
Result<std::filesystem::path> locate_binary(const std::string& name);

}  // namespace dancemoe::cli
