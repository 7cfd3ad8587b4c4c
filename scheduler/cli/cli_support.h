// Small helpers shared by the `dancemoe` sub-commands: reporting a failed
// Status and parsing common option values.
#pragma once

#include <cstdint>
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

}  // namespace dancemoe::cli
