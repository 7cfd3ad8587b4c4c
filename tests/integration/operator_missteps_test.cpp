// An operator's first hour (issue 21): each misstep a new operator makes
// following the lab guide by hand is answered plainly -- the message names
// the value and the form expected (or the fix), the exit code is the
// documented one (daemons: 1 cannot start, 2 refused), and it happens
// before any weight is read.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "tests/integration/node_cluster.h"
#include "tests/support/listening_port.h"
#include "tests/support/process.h"
#include "tests/support/scheduler_process.h"

namespace dancemoe::testing {
namespace {

using namespace std::chrono_literals;

struct Model {
  Model() : work("missteps") {
    dir = work.path() / "tiny";
    write_model(SyntheticModelSpec{}, dir);
    PlacementSpec empty;
    empty.experts["a"] = {};
    write_json(work.path() / "p.json",
               placement_json(empty, moe_layers_of(dir), 8, {{"a", "tcp://127.0.0.1:1"}}));
  }
  std::vector<std::string> node(std::vector<std::string> extra) const {
    std::vector<std::string> argv = {DMOE_NODE_PATH,    "--model", dir.string(),  "--node-id", "a",
                                     "--expert-memory", "64M",     "--log-level", "info"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  TempDir work;
  std::filesystem::path dir;
};

void check_refused(const ProcessResult& r, int code, const std::vector<std::string>& wants) {
  INFO("stderr: " << r.err << "\nstdout: " << r.out);
  CHECK(r.exit_code == code);
  for (const std::string& want : wants) CHECK(r.err.find(want) != std::string::npos);
  // Refused before any weight was read (the node logs its weights once loaded).
  CHECK(r.out.find("dense weights") == std::string::npos);
  CHECK(r.err.find("dense weights") == std::string::npos);
}

TEST_CASE("missteps: endpoint typos name the value and the form expected") {
  Model m;
  check_refused(run_process(m.node({"--scheduler", "127.0.0.1:5550"})), 1,
                {"--scheduler '127.0.0.1:5550'", "tcp:// prefix", "expected tcp://HOST:PORT"});
  check_refused(run_process(m.node({"--scheduler", "http://127.0.0.1:5550"})), 1,
                {"--scheduler 'http://127.0.0.1:5550'", "use tcp://"});
  check_refused(run_process(m.node(
                    {"--placement", (m.work.path() / "p.json").string(), "--http", "localhost"})),
                1, {"--http 'localhost'", "no port", "expected HOST:PORT"});
  const ProcessResult cli =
      run_process({DMOE_CLI_PATH, "prompt", "hi", "--node", "http://127.0.0.1:8080/v1"});
  CHECK(cli.exit_code == 2);
  CHECK(cli.err.find("--node 'http://127.0.0.1:8080/v1'") != std::string::npos);
  CHECK(cli.err.find("without a path") != std::string::npos);
  const ProcessResult status = run_process({DMOE_CLI_PATH, "status", "--scheduler", "host:5550"});
  CHECK(status.exit_code == 2);
  CHECK(status.err.find("expected tcp://HOST:PORT") != std::string::npos);
}

TEST_CASE("missteps: a missing required flag exits 1, not the argument library's code") {
  Model m;
  const ProcessResult node = run_process({DMOE_NODE_PATH, "--node-id", "a"});
  CHECK(node.exit_code == 1);
  CHECK(node.err.find("--model") != std::string::npos);
  const ProcessResult scheduler = run_process({DMOE_SCHEDULER_PATH, "--no-such-flag"});
  CHECK(scheduler.exit_code == 1);
  CHECK(run_process({DMOE_NODE_PATH, "--help"}).exit_code == 0);
}

TEST_CASE("missteps: an HTTP port in use is refused before the weights are loaded") {
  Model m;
  ListeningPort held;
  const std::string http = "127.0.0.1:" + std::to_string(held.port());
  check_refused(run_process(m.node({"--placement", (m.work.path() / "p.json").string(), "--http",
                                    http, "--experts", "tcp://127.0.0.1:*", "--insecure"})),
                1, {"--http " + http, "in use"});
}

std::vector<std::string> attached_node(SchedulerProcess& s, const std::string& id,
                                       std::vector<std::string> extra) {
  std::vector<std::string> argv = {
      DMOE_NODE_PATH, "--model",    tiny_model().dir.string(), "--node-id",   id,
      "--scheduler",  s.endpoint(), "--expert-memory",         "64M",         "--http",
      "127.0.0.1:0",  "--experts",  "tcp://127.0.0.1:*",       "--log-level", "info"};
  const std::vector<std::string> keys = s.node_args(id);
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

TEST_CASE("missteps: a node with another cluster id is refused once and exits 2") {
  TempDir work("missteps-cluster");
  SchedulerProcess s(DMOE_SCHEDULER_PATH, work.path() / "s", {});
  s.start();
  const ProcessResult r = run_process(attached_node(s, "a", {"--cluster-id", "lab2"}), 60s);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 2);
  const std::string all = r.out + r.err;
  CHECK(all.find("refused this node") != std::string::npos);
  CHECK(all.find("cluster id 'lab2'") != std::string::npos);
  CHECK(all.find("'default' (scheduler)") != std::string::npos);
}

TEST_CASE("missteps: a node id already in use is refused, named, and exits 2") {
  TempDir work("missteps-id");
  SchedulerProcess s(DMOE_SCHEDULER_PATH, work.path() / "s", {});
  s.start();
  std::vector<std::string> first = {
      "--model",   tiny_model().dir.string(), "--scheduler", s.endpoint(), "--http", "127.0.0.1:0",
      "--experts", "tcp://127.0.0.1:*"};
  const std::vector<std::string> keys = s.node_args("a");
  first.insert(first.end(), keys.begin(), keys.end());
  NodeProcess a(work.path(), "a", first);
  REQUIRE(a.wait_ready());
  REQUIRE(eventually([&] { return a.stats()["scheduler"].value("attached", false); }, 20s));
  // Another workstation, with its own admitted key, given the same id.
  std::vector<std::string> second = attached_node(s, "b", {});
  *std::find(second.begin(), second.end(), "b") = "a";
  const ProcessResult r = run_process(second, 60s);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK((r.out + r.err).find("node id 'a' is bound to key 'a'") != std::string::npos);
}

TEST_CASE("missteps: a node whose scheduler does not answer says so in its log and /health") {
  TempDir work("missteps-away");
  const std::string away = "tcp://127.0.0.1:" + std::to_string(free_tcp_port());
  NodeProcess node(work.path(), "a",
                   {"--model", tiny_model().dir.string(), "--scheduler", away, "--http",
                    "127.0.0.1:0", "--experts", "tcp://127.0.0.1:*", "--insecure"});
  REQUIRE(node.wait_ready());
  // The first registration times out after 2 s.
  std::string reason;
  CHECK(eventually(
      [&] {
        const auto [status, body] = node.get("/health");
        reason = body.is_object() ? body.value("reason", std::string()) : "";
        return status == 503 &&
               reason.find("no answer from the scheduler at " + away) != std::string::npos;
      },
      20s));
  INFO("health reason: " << reason << "\nlog:\n" << node.process().log());
  CHECK(reason.find("is dancemoe-scheduler running there") != std::string::npos);
  CHECK(node.process().log().find("not attached: no answer from the scheduler at " + away) !=
        std::string::npos);
  const json stats = node.stats();
  CHECK(stats["scheduler"]["attached"] == false);
  CHECK(stats["scheduler"]["reason"].get<std::string>().find(away) != std::string::npos);
}

TEST_CASE("doctor: a healthy node set-up passes every check, a broken one names each fix") {
  TempDir work("doctor-node");
  SchedulerProcess s(DMOE_SCHEDULER_PATH, work.path() / "s", {});
  s.start();
  std::vector<std::string> args = {
      DMOE_CLI_PATH, "doctor", "node",        "--model",    tiny_model().dir.string(),
      "--node-id",   "a",      "--scheduler", s.endpoint(), "--expert-memory",
      "64M",         "--http", "127.0.0.1:0", "--experts",  "tcp://127.0.0.1:*"};
  const std::vector<std::string> keys = s.node_args("a");  // admitted
  args.insert(args.end(), keys.begin(), keys.end());
  const ProcessResult healthy = run_process(args);
  {
    INFO("stdout: " << healthy.out << "\nstderr: " << healthy.err);
    CHECK(healthy.exit_code == 0);
    for (const char* check : {"model", "devices", "host", "ports", "keys", "scheduler", "clock"}) {
      CHECK(healthy.out.find(std::string("ok    ") + check) != std::string::npos);
    }
    CHECK(healthy.out.find("FAIL") == std::string::npos);
  }
  // The key of a node the scheduler has not admitted, readable by others;
  // a port in use; a model directory that is not one.
  s.keys().pair("b");
  const std::filesystem::path loose = s.keys().secret("b");
  ::chmod(loose.c_str(), 0644);
  ListeningPort busy;
  const ProcessResult broken = run_process(
      {DMOE_NODE_PATH, "--doctor", "--model", (work.path() / "nope").string(), "--node-id", "b",
       "--scheduler", s.endpoint(), "--http", "127.0.0.1:" + std::to_string(busy.port()),
       "--experts", "tcp://127.0.0.1:*", "--secret-key", loose.string(), "--scheduler-key",
       s.keys().scheduler_public().string()});
  INFO("stdout: " << broken.out << "\nstderr: " << broken.err);
  CHECK(broken.exit_code == 1);
  CHECK(broken.out.find("FAIL  model") != std::string::npos);
  CHECK(broken.out.find("nope") != std::string::npos);
  CHECK(broken.out.find("FAIL  ports") != std::string::npos);
  CHECK(broken.out.find("--http 127.0.0.1:" + std::to_string(busy.port())) != std::string::npos);
  CHECK(broken.out.find("FAIL  keys") != std::string::npos);
  CHECK(broken.out.find("chmod 600") != std::string::npos);
  CHECK(broken.out.find("-> fix:") != std::string::npos);
  // Keys that read but are not admitted: the scheduler never answers.
  ::chmod(loose.c_str(), 0600);
  const ProcessResult unadmitted =
      run_process({DMOE_NODE_PATH, "--doctor", "--model", tiny_model().dir.string(), "--node-id",
                   "b", "--scheduler", s.endpoint(), "--expert-memory", "64M", "--http",
                   "127.0.0.1:0", "--experts", "tcp://127.0.0.1:*", "--secret-key", loose.string(),
                   "--scheduler-key", s.keys().scheduler_public().string()});
  INFO("stdout: " << unadmitted.out);
  CHECK(unadmitted.exit_code == 1);
  CHECK(unadmitted.out.find("FAIL  scheduler") != std::string::npos);
  CHECK(unadmitted.out.find("dancemoe nodes admit") != std::string::npos);
}

TEST_CASE("doctor: a scheduler set-up, healthy and broken") {
  TempDir work("doctor-scheduler");
  SchedulerProcess s(DMOE_SCHEDULER_PATH, work.path() / "s", {});
  s.start();
  std::vector<std::string> args = {DMOE_CLI_PATH,
                                   "doctor",
                                   "scheduler",
                                   "--model",
                                   tiny_model().dir.string(),
                                   "--control",
                                   "tcp://127.0.0.1:0",
                                   "--db",
                                   s.db_path().string()};
  const std::vector<std::string> keys = s.keys().scheduler_args();
  args.insert(args.end(), keys.begin(), keys.end());
  const ProcessResult healthy = run_process(args);
  {
    INFO("stdout: " << healthy.out << "\nstderr: " << healthy.err);
    CHECK(healthy.exit_code == 0);
    CHECK(healthy.out.find("ok    database") != std::string::npos);
    CHECK(healthy.out.find("ok    keys") != std::string::npos);
    CHECK(healthy.out.find("ok    port") != std::string::npos);
  }
  // Its own control port (in use), another cluster id on its database.
  std::vector<std::string> broken = {
      DMOE_SCHEDULER_PATH, "--doctor",   "--model", tiny_model().dir.string(),
      "--control",         s.endpoint(), "--db",    s.db_path().string(),
      "--cluster-id",      "lab2"};
  broken.insert(broken.end(), keys.begin(), keys.end());
  const ProcessResult r = run_process(broken);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("FAIL  port") != std::string::npos);
  CHECK(r.out.find("FAIL  database") != std::string::npos);
  CHECK(r.out.find("belongs to cluster 'default'") != std::string::npos);
  // A bad setting is a failed check, not a crash.
  const ProcessResult flags = run_process({DMOE_SCHEDULER_PATH, "--doctor", "--interval", "-1"});
  CHECK(flags.exit_code == 1);
  CHECK(flags.out.find("FAIL  config") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::testing
