// `dancemoe demo` end to end: the README's main job, on the tiny model so it
// takes seconds -- a scheduler and three nodes start, serve prompts, a
// placement round is forced, local-hit ratios are shown before and after,
// and every process it started is gone when it returns.
#include <doctest/doctest.h>
#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/model/synthetic/synthetic_model.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"

namespace dancemoe::testing {

TEST_CASE("demo: a scheduler and three nodes serve, a round is forced, all stopped after") {
  TempDir work("demo");
  const std::filesystem::path model = work.path() / "tiny";
  SyntheticModelSpec spec;
  spec.preset = "tiny";
  write_model(spec, model);
  const std::filesystem::path logs = work.path() / "logs";
  const ProcessResult r =
      run_process({DMOE_CLI_PATH, "demo", "--model", model.string(), "--work-dir", logs.string(),
                   "--prompts", "2", "--max-tokens", "8"},
                  std::chrono::seconds(120));
  INFO(r.out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("all nodes healthy") != std::string::npos);
  // Secure by default: keys generated, the scheduler and nodes run with them.
  CHECK(r.out.find("(CurveZMQ on)") != std::string::npos);
  CHECK((std::filesystem::status(logs / "keys" / "operator.key").permissions() &
         std::filesystem::perms::group_read) == std::filesystem::perms::none);
  std::ifstream scheduler_log(logs / "scheduler.log");
  std::stringstream scheduler_text;
  scheduler_text << scheduler_log.rdbuf();
  CHECK(scheduler_text.str().find("CurveZMQ on: 3 admitted node key(s), 1 operator key(s)") !=
        std::string::npos);
  CHECK(r.out.find("status before the placement round") != std::string::npos);
  CHECK(r.out.find("on_demand") != std::string::npos);  // the forced round's decision
  CHECK(r.out.find("status after the placement round") != std::string::npos);
  for (const char* id : {"a", "b", "c"}) {
    CHECK(r.out.find(std::string("node ") + id + ": ") != std::string::npos);
  }
  CHECK(r.out.find(" before -> ") != std::string::npos);
  CHECK(r.out.find("stopped the scheduler and the 3 nodes") != std::string::npos);

  // Nothing left running: the nodes' pids (from their ready files) are gone.
  for (const char* id : {"a", "b", "c"}) {
    std::ifstream in(logs / (std::string("node-") + id + ".ready.json"));
    REQUIRE(in);
    const nlohmann::json ready = nlohmann::json::parse(in);
    const pid_t pid = ready["pid"].get<pid_t>();
    CHECK(::kill(pid, 0) == -1);
  }
}

TEST_CASE("demo: a missing model directory or a bad flag is a clear error, nothing started") {
  TempDir work("demo_bad");
  const ProcessResult r =
      run_process({DMOE_CLI_PATH, "demo", "--model", (work.path() / "missing").string(),
                   "--work-dir", (work.path() / "logs").string()},
                  std::chrono::seconds(60));
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("missing") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(work.path() / "logs" / "scheduler.log"));

  const ProcessResult bad_flag =
      run_process({DMOE_CLI_PATH, "demo", "--prompts", "9"}, std::chrono::seconds(30));
  CHECK(bad_flag.exit_code != 0);
  CHECK(bad_flag.err.find("--prompts") != std::string::npos);
}

}  // namespace dancemoe::testing
