// `dancemoe status --watch`: redraws the status of a running scheduler until
// interrupted, and keeps going (saying so) when the scheduler is away.
#include <doctest/doctest.h>

#include "tests/support/paths.h"
#include "tests/support/process.h"
#include "tests/support/scheduler_process.h"

namespace dancemoe::testing {

namespace {
size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("status --watch: redraws until interrupted, an absent scheduler is retried") {
  TempDir dir("status_watch");
  SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(), {});
  scheduler.start();
  const ProcessResult watched =
      run_process(scheduler.cli_command({DMOE_CLI_PATH, "status", "--watch", "0.2"}),
                  std::chrono::milliseconds(1500));
  CHECK(watched.timed_out);  // it runs until stopped
  CHECK(occurrences(watched.out, "placement  ") >= 3);
  scheduler.stop();
  const ProcessResult away = run_process(
      scheduler.cli_command({DMOE_CLI_PATH, "status", "--watch", "0.2", "--timeout", "0.2"}),
      std::chrono::milliseconds(1500));
  CHECK(away.timed_out);
  CHECK(occurrences(away.out, "scheduler unreachable") >= 2);
}

}  // namespace dancemoe::testing
