// Running the project's executables from integration tests: real processes,
// bounded in time, killed (with their process group) if they overrun.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace dancemoe::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed for overrunning or by a signal
  bool timed_out = false;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs argv[0] with the arguments, waits at most `timeout`.
ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace dancemoe::testing
