// An operator's first hour (issue 21): each misstep a new operator makes
// following the lab guide by hand is answered plainly -- the message names
// the value and the form expected (or the fix), the exit code is the
// documented one (daemons: 1 cannot start, 2 refused), and it happens
// before any weight is read.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/node_cluster.h"
#include "tests/support/process.h"

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
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd, 1) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string http = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  check_refused(run_process(m.node({"--placement", (m.work.path() / "p.json").string(), "--http",
                                    http, "--experts", "tcp://127.0.0.1:*"})),
                1, {"--http " + http, "in use"});
  ::close(fd);
}

}  // namespace
}  // namespace dancemoe::testing
