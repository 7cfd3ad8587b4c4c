// Which processes of a given program run on this host, from /proc -- how a
// dancemoe-node notices another one beside it (they must not both take all
// of the host's free memory), and what `dancemoe doctor` reports. Linux
// only; thread-safe.
#pragma once

#include <string_view>
#include <vector>

namespace dancemoe {

// Pids of the processes whose command name (/proc/PID/comm, at most 15
// characters) is `comm`, this process excluded, ascending.
std::vector<int> processes_named(std::string_view comm);

}  // namespace dancemoe
