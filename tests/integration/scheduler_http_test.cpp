// The real scheduler daemon's HTTP endpoint with keys (docs/web.md "Who may
// read it, and who may act"): key tokens from `dancemoe keys http-token`,
// checked against the same keys as the control port -- a member reads, only
// an operator runs a round, a revoked node key is refused at once.
#include <doctest/doctest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "common/net/key_token.h"
#include "tests/integration/cli_path.h"
#include "tests/integration/scheduler_fixtures.h"
#include "tests/support/paths.h"
#include "tests/support/process.h"

namespace dancemoe {
namespace {

using nlohmann::json;
using testing::run_process;

struct Reply {
  int status = -1;
  json body;
};

Reply call(const std::string& address, const std::string& method, const std::string& path,
           const std::string& token = "") {
  httplib::Client client("http://" + address);
  client.set_read_timeout(10, 0);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto res = method == "POST" ? client.Post(path.c_str(), headers, "{}", "application/json")
                              : client.Get(path.c_str(), headers);
  REQUIRE(res);
  return {res->status, json::parse(res->body, nullptr, false)};
}

}  // namespace

TEST_CASE("scheduler http: with keys, members read, operators act, a revoked key is refused") {
  testing::TempDir dir("sched-http");
  testing::SchedulerProcess scheduler(DMOE_SCHEDULER_PATH, dir.path(),
                                      testing::fast_scheduler_flags());
  scheduler.start();
  REQUIRE(scheduler.secure());
  REQUIRE_FALSE(scheduler.http().empty());
  (void)scheduler.node_curve("ws1");  // admitted with `dancemoe nodes admit`
  testing::ClusterKeys& keys = scheduler.keys();

  // The operator's token, as the CLI prints it.
  auto printed = run_process({kCli, "keys", "http-token", "--key", keys.operator_secret().string(),
                              "--scheduler-key", keys.scheduler_public().string()});
  INFO(printed.err);
  REQUIRE(printed.exit_code == 0);
  const std::string op = printed.out.substr(0, printed.out.find('\n'));
  REQUIRE(op.rfind("dmk1-", 0) == 0);
  const std::string ws1 = *net::make_key_token(keys.pair("ws1"), keys.scheduler_pair().public_key);
  const std::string stranger =
      *net::make_key_token(keys.pair("stranger"), keys.scheduler_pair().public_key);

  const std::string http = scheduler.http();
  CHECK(call(http, "GET", "/api/status").status == 200);  // a local reader
  CHECK(call(http, "GET", "/api/status", ws1).status == 200);
  CHECK(call(http, "GET", "/metrics", op).status == 200);
  CHECK(call(http, "GET", "/api/status", stranger).status == 401);

  CHECK(call(http, "POST", "/api/round").status == 401);
  const Reply by_node = call(http, "POST", "/api/round", ws1);
  CHECK(by_node.status == 403);
  CHECK(call(http, "POST", "/api/round", stranger).status == 401);
  CHECK(call(http, "GET", "/api/decisions").body["decisions"].empty());
  const Reply by_operator = call(http, "POST", "/api/round", op);
  INFO(by_operator.body.dump());
  CHECK(by_operator.status == 200);
  CHECK(by_operator.body["trigger"] == "on_demand");
  CHECK(call(http, "GET", "/api/decisions").body["decisions"].size() == 1);
  CHECK(scheduler.log().find("placement round asked by operator 'operator'") != std::string::npos);

  // Revoked on the control port: refused over HTTP on the next request.
  auto revoked = run_process(scheduler.cli_command({kCli, "nodes", "revoke", "ws1"}));
  INFO(revoked.err);
  REQUIRE(revoked.exit_code == 0);
  const Reply after = call(http, "GET", "/api/status", ws1);
  CHECK(after.status == 401);
  CHECK(after.body["error"]["message"].get<std::string>().find("not a member") !=
        std::string::npos);
  CHECK(call(http, "GET", "/api/status", op).status == 200);
}

}  // namespace dancemoe
