#include "tests/support/child_process.h"

#include <doctest/doctest.h>

#include "tests/support/paths.h"

namespace dancemoe {

TEST_CASE("child process: output goes to the log and stop/kill leave nothing running") {
  testing::TempDir dir("child");
  testing::ChildProcess echo({"/bin/sh", "-c", "echo hello; exit 3"}, dir.path() / "echo.log");
  CHECK(echo.wait(std::chrono::seconds(10)) == 3);
  CHECK(echo.log() == "hello\n");

  testing::ChildProcess sleeper({"/bin/sleep", "60"}, dir.path() / "sleep.log");
  CHECK(sleeper.running());
  CHECK_FALSE(sleeper.stop(std::chrono::seconds(5)).has_value());  // died from SIGTERM
  CHECK_FALSE(sleeper.running());

  testing::ChildProcess killed({"/bin/sleep", "60"}, dir.path() / "kill.log");
  killed.kill();
  CHECK_FALSE(killed.running());
}

}  // namespace dancemoe
