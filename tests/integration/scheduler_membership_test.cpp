// The real scheduler daemon with protocol peers on 127.0.0.1: registration,
// refusal of another model, heartbeats and the CLI's view of the nodes.
#include <doctest/doctest.h>

#include <thread>

#include "tests/integration/cli_path.h"
#include "tests/integration/scheduler_fixtures.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"

namespace dancemoe {
namespace {

using namespace std::chrono_literals;
using testing::eventually;
using testing::make_peer;
using testing::run_process;

}  // namespace

TEST_CASE("scheduler daemon: registers nodes of its model, refuses another model naming both") {
  testing::TempDir dir("sched-members");
  testing::SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(),
                                      testing::fast_scheduler_flags());
  scheduler.start();
  auto a = make_peer(scheduler, "node-a", 16);
  REQUIRE(a->wait_registered(10s) == true);

  testing::PeerOptions wrong;
  wrong.scheduler = scheduler.endpoint();
  wrong.curve = scheduler.node_curve("node-x");
  wrong.node_id = "node-x";
  wrong.model_id = "0123456789abcdef0123456789abcdef";
  wrong.devices = {{"gpu0", 16 * testing::kTinyExpertBytes, 1e9, "cuda"}};
  testing::ProtocolPeer x(wrong);
  x.start();
  REQUIRE(x.wait_registered(10s) == false);
  CHECK(x.refusal_reason() == "model id 0123456789abcdef0123456789abcdef (node node-x) != " +
                                  testing::tiny_model().model_id + " (scheduler)");

  testing::PeerOptions other_cluster = wrong;
  other_cluster.node_id = "node-y";
  other_cluster.curve = scheduler.node_curve("node-y");
  other_cluster.model_id = testing::tiny_model().model_id;
  other_cluster.cluster_id = "lab-2";
  other_cluster.auto_register = false;
  testing::ProtocolPeer y(other_cluster);
  y.start();
  auto refused = y.request(proto::Heartbeat{0, 0}, 10s);
  REQUIRE(refused.is_ok());
  const auto* error = std::get_if<proto::Error>(&refused->body);
  REQUIRE(error != nullptr);
  CHECK(error->message == "cluster id 'lab-2' (node-y) != 'default' (scheduler)");

  // The CLI sees one node up; node-x never became a member.
  auto nodes = run_process(scheduler.cli_command({kCli, "nodes", "--json"}));
  INFO(nodes.err);
  REQUIRE(nodes.exit_code == 0);
  const auto json = nlohmann::json::parse(nodes.out);
  REQUIRE(json["nodes"].size() == 1);
  CHECK(json["nodes"][0]["id"] == "node-a");
  CHECK(json["nodes"][0]["state"] == "up");
  CHECK(json["nodes"][0]["devices"][0]["budget_bytes"] == 16 * testing::kTinyExpertBytes);
  CHECK(json["nodes"][0]["devices"][0]["kind"] == "cuda");
  auto text = run_process(scheduler.cli_command({kCli, "nodes"}));
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("node-a") != std::string::npos);
  CHECK(text.out.find("ENDPOINT") != std::string::npos);
  auto status = testing::scheduler_query(scheduler, "status");
  REQUIRE(status.is_ok());
  CHECK((*status)["counters"]["rejected_model_mismatch_total"] == 1);
  CHECK((*status)["counters"]["rejected_wrong_cluster_total"] == 1);
  CHECK(scheduler.stop() == 0);
  CHECK(scheduler.log().find("database closed cleanly") != std::string::npos);
}

TEST_CASE("scheduler daemon: a node that stops heartbeating is marked down, and can come back") {
  testing::TempDir dir("sched-heartbeat");
  testing::SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(),
                                      testing::fast_scheduler_flags());
  scheduler.start();
  auto a = make_peer(scheduler, "node-a", 16);
  auto b = make_peer(scheduler, "node-b", 16);
  REQUIRE(a->wait_registered(10s) == true);
  REQUIRE(b->wait_registered(10s) == true);
  auto state = [&](const std::string& node) {
    auto nodes = testing::scheduler_query(scheduler, "nodes");
    if (!nodes.is_ok()) return std::string("error");
    for (const auto& n : (*nodes)["nodes"]) {
      if (n["id"] == node) return n["state"].get<std::string>();
    }
    return std::string("absent");
  };
  // 1.5 s of heartbeats: both stay up (the timeout is 0.6 s).
  std::this_thread::sleep_for(1500ms);
  CHECK(state("node-a") == "up");
  CHECK(state("node-b") == "up");
  b->stop();
  CHECK(eventually([&] { return state("node-b") == "down"; }, 5s));
  CHECK(state("node-a") == "up");
  b->start();  // a restarted node registers again
  CHECK(eventually([&] { return state("node-b") == "up"; }, 5s));
  CHECK(b->registrations() == 2);
}

TEST_CASE("scheduler cli: unreachable scheduler gives a clear message and a non-zero exit") {
  const int port = testing::free_tcp_port();
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  for (const std::vector<std::string>& command : {std::vector<std::string>{"status"},
                                                  {"nodes"},
                                                  {"migrations"},
                                                  {"placement"},
                                                  {"placement", "propose"},
                                                  {"placement", "apply"}}) {
    std::vector<std::string> argv = {kCli};
    argv.insert(argv.end(), command.begin(), command.end());
    argv.insert(argv.end(), {"--scheduler", endpoint, "--timeout", "0.3", "--insecure"});
    auto r = run_process(argv, 20s);
    CAPTURE(command[0]);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("no answer from the scheduler at " + endpoint + " within 0.3 s") !=
          std::string::npos);
  }
  auto help = run_process({kCli, "--help"});
  for (const char* command : {"status", "nodes", "migrations", "placement"}) {
    CHECK(help.out.find(command) != std::string::npos);
  }
  auto daemon_help = run_process({DMOE_SCHEDULER_PATH, "--help"});
  CHECK(daemon_help.out.find("--heartbeat-misses") != std::string::npos);
  CHECK(daemon_help.out.find("placement period, seconds [default: 300]") != std::string::npos);
  auto bad = run_process({DMOE_SCHEDULER_PATH, "--model", "/nonexistent", "--interval", "-1"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("--interval / interval: expected seconds in [0.01, 3.1536e+07], got -1") !=
        std::string::npos);
}

}  // namespace dancemoe
