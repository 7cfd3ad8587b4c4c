// The placement loop of the real daemon with protocol peers: cold start,
// a gated round rejected then adopted as evidence grows, two-phase
// migration to commit, a peer dying during prepare, and the CLI commands
// that show it all.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "tests/integration/cli_path.h"
#include "tests/integration/scheduler_fixtures.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"

namespace dancemoe {
namespace {

using namespace std::chrono_literals;
using testing::make_peer;
using testing::run_process;

// The CLI as the scheduler's operator.
nlohmann::json cli_json(const testing::SchedulerProcess& scheduler,
                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kCli};
  argv.insert(argv.end(), args.begin(), args.end());
  argv = scheduler.cli_command(std::move(argv));
  argv.push_back("--json");
  auto r = run_process(argv, 30s);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE(
    "scheduler daemon: cold start, then a gated round rejected and later adopted, committed") {
  testing::TempDir dir("sched-place");
  // `optimal`, not the default: this case works the gate of a policy that
  // ignores load time (a better placement that does not pay for its loads).
  // `latency` is migration-aware and keeps the current placement itself
  // (latency_test: "prohibitive loading keeps the current placement").
  std::vector<std::string> flags = testing::fast_scheduler_flags();
  flags.insert(flags.end(), {"--policy", "optimal"});
  testing::SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(), flags);
  scheduler.start();
  // Slow loads: one expert takes 12288 B / 4096 B/s = 3 s, so moving needs evidence.
  auto a = make_peer(scheduler, "node-a", 16, 4096.0);
  auto b = make_peer(scheduler, "node-b", 16, 4096.0);
  REQUIRE(a->wait_registered(10s) == true);
  REQUIRE(b->wait_registered(10s) == true);

  // Cold start: uniform coverage, prepared on both, committed.
  REQUIRE(a->wait_committed(1, 15s));
  REQUIRE(b->wait_committed(1, 15s));
  const auto placement = cli_json(scheduler, {"placement"});
  CHECK(placement["version"] == 1);
  CHECK(placement["policy"] == "uniform");
  const auto on_b = testing::experts_of(placement, "node-b");
  REQUIRE(on_b.size() == 12);

  // Little evidence that a wants b's experts: not worth the loads.
  REQUIRE(a->report(testing::tiny_report(on_b, 1, 1000), 10s).is_ok());
  const auto rejected = cli_json(scheduler, {"placement", "round"});
  INFO(rejected.dump());
  CHECK(rejected["outcome"] == "rejected");
  CHECK(rejected["cost_new_s"].get<double>() < rejected["cost_current_s"].get<double>());
  CHECK(rejected["cost_new_s"].get<double>() + rejected["migration_s"].get<double>() >=
        rejected["cost_current_s"].get<double>());
  CHECK(a->committed_version() == 1);

  // The same demand, a thousand times stronger: now it pays.
  const auto proposal = cli_json(scheduler, {"placement", "propose"});
  CHECK(proposal["gate"]["adopt"] == false);
  REQUIRE(a->report(testing::tiny_report(on_b, 1000, 2000), 10s).is_ok());
  const auto adopted = cli_json(scheduler, {"placement", "round"});
  INFO(adopted.dump());
  CHECK(adopted["outcome"] == "adopted");
  CHECK(adopted["cost_new_s"].get<double>() + adopted["migration_s"].get<double>() <
        adopted["cost_current_s"].get<double>());
  CHECK(adopted["version"] == 2);
  REQUIRE(a->wait_committed(2, 15s));
  REQUIRE(b->wait_committed(2, 15s));
  // Every node got the whole placement, with each node's expert endpoint.
  const auto prepare = a->last_prepare();
  REQUIRE(prepare.has_value());
  CHECK(prepare->version == 2);
  REQUIRE(prepare->nodes.size() == 2);
  CHECK(prepare->nodes[1].expert_endpoint == "tcp://127.0.0.1:" + std::to_string(6000 + 'n'));
  // a now holds more of what it asked for.
  const auto after = cli_json(scheduler, {"placement"});
  size_t moved = 0;
  for (const auto& x : testing::experts_of(after, "node-a")) {
    moved += std::count(on_b.begin(), on_b.end(), x);
  }
  CHECK(moved >= 4);

  const auto status = cli_json(scheduler, {"status"});
  CHECK(status["placement"]["version"] == 2);
  CHECK(status["last_decision"]["outcome"] == "adopted");
  CHECK(status["migration"].is_null());
  CHECK(status["nodes"]["up"] == 2);
  const auto migrations = cli_json(scheduler, {"migrations"});
  CHECK(migrations["migrations"][0]["outcome"] == "committed");
  CHECK(migrations["migrations"][0]["to_version"] == 2);
  CHECK(migrations["decisions"][1]["outcome"] == "rejected");

  // The text forms an operator reads.
  auto text = run_process(scheduler.cli_command({kCli, "status"}));
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("version 2") != std::string::npos);
  CHECK(text.out.find("C(P) = ") != std::string::npos);
  auto map = run_process(scheduler.cli_command({kCli, "placement", "--layer", "2"}));
  REQUIRE(map.exit_code == 0);
  CHECK(map.out.find("layer 2") != std::string::npos);
  CHECK(map.out.find("layer 0") == std::string::npos);
  CHECK(map.out.find("copies") != std::string::npos);
  CHECK(map.out.find("\033[") == std::string::npos);  // not a terminal: no colour
  auto dense = run_process(scheduler.cli_command({kCli, "placement", "--layer", "1"}));
  CHECK(dense.exit_code == 2);
  CHECK(dense.err.find("not a MoE layer") != std::string::npos);
}

TEST_CASE(
    "scheduler daemon: a peer that dies during prepare aborts the version, coverage repaired") {
  testing::TempDir dir("sched-die");
  testing::SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(),
                                      testing::fast_scheduler_flags());
  scheduler.start();
  auto a = make_peer(scheduler, "node-a", 12);
  auto b = make_peer(scheduler, "node-b", 12);
  auto c = make_peer(scheduler, "node-c", 8);
  for (auto* p : {a.get(), b.get(), c.get()}) REQUIRE(p->wait_committed(1, 15s));

  // c will die on the next prepare; an operator apply starts one.
  c->set_prepare_answer(testing::PrepareAnswer::kDie);
  const auto applied = cli_json(scheduler, {"placement", "apply", "--policy", "dancemoe"});
  INFO(applied.dump());
  CHECK(applied["outcome"] == "adopted");
  CHECK(applied["trigger"] == "operator");
  const uint64_t doomed = applied["version"].get<uint64_t>();
  REQUIRE(a->wait_aborted(doomed, 10s));
  // The old placement stays active: the doomed version is never committed
  // (the repair below may already be, when this thread runs late under load).
  for (auto* p : {a.get(), b.get()}) {
    const std::vector<uint64_t> commits = p->committed_versions();
    INFO(p->node_id());
    CHECK(std::find(commits.begin(), commits.end(), doomed) == commits.end());
    CHECK(p->committed_version() != doomed);
  }

  // Then c is down and its sole copies are repaired without the gate.
  const auto repaired = a->wait_commit_above(doomed, 15s);
  REQUIRE(repaired.has_value());
  CHECK(b->wait_committed(*repaired, 10s));
  const auto migrations = cli_json(scheduler, {"migrations"});
  INFO(migrations.dump());
  const auto& aborted = migrations["migrations"][1];
  CHECK(aborted["to_version"] == doomed);
  CHECK(aborted["outcome"] == "aborted");
  CHECK(aborted["reason"].get<std::string>().find("node-c") != std::string::npos);
  CHECK(migrations["migrations"][0]["trigger"] == "coverage_repair");
  CHECK(migrations["migrations"][0]["outcome"] == "committed");
  const auto prepare = a->last_prepare();
  REQUIRE(prepare.has_value());
  for (const auto& node : prepare->nodes) CHECK(node.node_id != "node-c");
}

TEST_CASE("scheduler daemon: a node that never answers prepare times out and the version aborts") {
  testing::TempDir dir("sched-timeout");
  auto flags = testing::fast_scheduler_flags();
  testing::set_flag(flags, "--prepare-timeout", "1");
  testing::SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(), flags);
  scheduler.start();
  auto a = make_peer(scheduler, "node-a", 16);
  auto b = make_peer(scheduler, "node-b", 16);
  REQUIRE(a->wait_committed(1, 15s));
  REQUIRE(b->wait_committed(1, 15s));
  b->set_prepare_answer(testing::PrepareAnswer::kSilent);
  const auto applied = cli_json(scheduler, {"placement", "apply"});
  const uint64_t version = applied["version"].get<uint64_t>();
  const auto during = cli_json(scheduler, {"status"});
  if (!during["migration"].is_null()) {
    CHECK(during["migration"]["version"] == version);
    CHECK(during["migration"]["waiting"].dump().find("node-b") != std::string::npos);
  }
  REQUIRE(a->wait_aborted(version, 10s));
  CHECK(a->committed_version() == 1);
  const auto status = cli_json(scheduler, {"status"});
  CHECK(status["placement"]["version"] == 1);
  const auto migrations = cli_json(scheduler, {"migrations"});
  CHECK(migrations["migrations"][0]["reason"].get<std::string>().find(
            "prepare timed out after 1.0 s waiting for node-b") != std::string::npos);
}

}  // namespace dancemoe
