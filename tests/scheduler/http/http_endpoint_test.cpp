// The scheduler's HTTP endpoint over a real service loop (ControlServer with
// its inbox), a real SQLite file and real HTTP on 127.0.0.1.
#include "scheduler/http/http_endpoint.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <functional>
#include <thread>

#include "common/net/key_token.h"
#include "scheduler/daemon/control_server.h"
#include "tests/scheduler/daemon/service_harness.h"

namespace dancemoe::scheduler::test {
namespace {

using nlohmann::json;

// A service with nodes a and b, the cold-start placement committed and one
// report from each, its loop on a thread, and the endpoint in front of it.
class EndpointFixture {
 public:
  explicit EndpointFixture(std::function<void(HttpEndpointOptions&)> configure = nullptr) {
    h_.register_node("a", 16000);
    h_.register_node("b", 16000);
    auto out = h_.heartbeat_and_advance({"a", "b"}, 2100);
    h_.answer_ready(out);
    REQUIRE(h_.service().committed_version() == 1);
    proto::ActivationReport from_a =
        report_of(40, {{0, 1}, {2, 3}}, 5, h_.clock().wall_ms() - 1000);
    from_a.placement_version = 1;
    from_a.local_hits = 6;
    from_a.remote = {{"b", 4, 250.0, 400.0, 4096, 0}};
    h_.send("a", from_a);
    h_.send("b", report_of(20, {{3, 7}}, 4, h_.clock().wall_ms() - 1000));
    h_.clock().advance_ms(1000);
    auto inbox = ServiceInbox::create();
    REQUIRE(inbox.is_ok());
    inbox_ = std::move(*inbox);
    ControlServerOptions control;
    control.endpoint = "tcp://127.0.0.1:*";
    auto server = ControlServer::bind(control, &h_.service());
    REQUIRE(server.is_ok());
    control_ = std::move(*server);
    control_->set_inbox(inbox_.get());
    control_->set_metrics(&metrics_);
    loop_ = std::thread([this] { (void)control_->run(stop_); });
    HttpEndpointOptions options;
    options.address = "127.0.0.1:0";
    options.db_path = h_.path();
    if (configure) configure(options);
    started_ = HttpEndpoint::start(options, {inbox_.get(), &h_.model(), &metrics_, &h_.clock()});
  }
  ~EndpointFixture() {
    if (started_.is_ok()) started_->reset();
    stop_ = true;
    loop_.join();
  }

  const Result<std::unique_ptr<HttpEndpoint>>& started() const { return started_; }

  struct Reply {
    int status = -1;
    json body;
    std::string raw;
    httplib::Headers headers;
  };
  Reply get(const std::string& path, const std::string& token = "", const std::string& host = "") {
    REQUIRE(started_.is_ok());
    httplib::Client client("http://" + (*started_)->bound_address());
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    if (!host.empty()) headers.emplace("Host", host);
    auto res = client.Get(path.c_str(), headers);
    REQUIRE(res);
    return {res->status, json::parse(res->body, nullptr, false), res->body, res->headers};
  }
  Reply post(const std::string& path, const std::string& body, const std::string& token = "") {
    REQUIRE(started_.is_ok());
    httplib::Client client("http://" + (*started_)->bound_address());
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    auto res = client.Post(path.c_str(), headers, body, "application/json");
    REQUIRE(res);
    return {res->status, json::parse(res->body, nullptr, false), res->body, res->headers};
  }

 private:
  Harness h_;
  std::unique_ptr<ServiceInbox> inbox_;
  LoopMetrics metrics_;
  std::unique_ptr<ControlServer> control_;
  std::atomic<bool> stop_{false};
  std::thread loop_;
  Result<std::unique_ptr<HttpEndpoint>> started_ = internal_error("not started");
};

// A keyed scheduler's HTTP keys: its own pair, operator "alice", node key
// "ws1" admitted; `stranger` has a key nobody admitted. The allowlist is the
// one a KeyRing publishes (the control port's ZAP handler reads the same).
struct Keys {
  net::CurveKeyPair scheduler = *net::generate_key_pair();
  net::CurveKeyPair alice = *net::generate_key_pair();
  net::CurveKeyPair ws1 = *net::generate_key_pair();
  net::CurveKeyPair stranger = *net::generate_key_pair();
  std::shared_ptr<net::KeyAllowlist> members = std::make_shared<net::KeyAllowlist>();

  Keys() { members->replace({alice.public_key, ws1.public_key}); }
  HttpKeys http() const { return {scheduler, members, {{"alice", alice.public_key}}}; }
  std::string token(const net::CurveKeyPair& who) const {
    return *net::make_key_token(who, scheduler.public_key);
  }
};

}  // namespace

TEST_CASE("http endpoint: status, nodes, placement and decisions are the control port's JSON") {
  EndpointFixture f;
  REQUIRE(f.started().is_ok());
  const auto status = f.get("/api/status");
  REQUIRE(status.status == 200);
  CHECK(status.body["placement"]["version"] == 1);
  CHECK(status.body["nodes"]["up"] == 2);
  CHECK(status.body["nodes"]["list"][0]["id"] == "a");
  CHECK(status.body["nodes"]["list"][0]["devices"][0]["name"] == "gpu0");

  const auto nodes = f.get("/api/nodes");
  REQUIRE(nodes.status == 200);
  CHECK(nodes.body["nodes"].size() == 2);
  CHECK(nodes.body["nodes"][1]["expert_endpoint"] == "tcp://b:5551");

  const auto placement = f.get("/api/placement");
  REQUIRE(placement.status == 200);
  CHECK(placement.body["version"] == 1);
  CHECK(placement.body["layers"].size() == 3);  // the MoE layers 0, 2, 3
  CHECK(placement.body["layers"][0]["holders"].size() == 8);
  CHECK(f.get("/api/placement?layer=2").body["layers"].size() == 1);
  const auto dense = f.get("/api/placement?layer=1");
  CHECK(dense.status == 400);
  CHECK(dense.body["error"]["message"].get<std::string>().find("not a MoE layer") !=
        std::string::npos);

  const auto decisions = f.get("/api/decisions?limit=5");
  REQUIRE(decisions.status == 200);
  REQUIRE(decisions.body["decisions"].size() == 1);
  CHECK(decisions.body["decisions"][0]["trigger"] == "cold_start");
  CHECK(decisions.body.contains("migrations") == false);
  const auto migrations = f.get("/api/migrations");
  REQUIRE(migrations.status == 200);
  CHECK(migrations.body["migrations"][0]["outcome"] == "committed");
  CHECK(f.get("/health").body["status"] == "ok");
}

TEST_CASE("http endpoint: history and heat come from the SQLite file") {
  EndpointFixture f;
  const auto series = f.get("/api/series?window_s=600&points=60");
  REQUIRE(series.status == 200);
  CHECK(series.body["points"] == 60);
  CHECK(series.body["step_ms"] == 10000);
  REQUIRE(series.body["nodes"].size() == 2);
  const json& a = series.body["nodes"][0];
  CHECK(a["id"] == "a");
  uint64_t activations = 0;
  for (const json& v : a["activations"]) activations += v.get<uint64_t>();
  CHECK(activations == 10);  // two experts picked 5 times
  CHECK(series.body["peers"][0]["id"] == "b");
  double latency = 0;
  for (const json& v : series.body["peers"][0]["mean_latency_us"]) {
    if (v.is_number()) latency = v.get<double>();
  }
  CHECK(latency == doctest::Approx(250.0));
  REQUIRE(series.body["placements"].size() == 1);
  CHECK(series.body["placements"][0]["version"] == 1);

  const auto heat = f.get("/api/heat");
  REQUIRE(heat.status == 200);
  CHECK(heat.body["version"] == 1);
  CHECK(heat.body["layers"] == json{0, 2, 3});
  // node a: layer 0 expert 1 and layer 2 expert 3, five times each
  CHECK(heat.body["nodes"][0]["counts"][0][1] == 5);
  CHECK(heat.body["nodes"][0]["counts"][1][3] == 5);
  CHECK(heat.body["nodes"][1]["counts"][2][7] == 4);
  CHECK(heat.body["total"][2][7] == 4);
  CHECK(heat.body["nodes"][0]["total"] == 10);
}

TEST_CASE("http endpoint: bad parameters name themselves, unknown routes are 404") {
  EndpointFixture f;
  for (const char* bad :
       {"/api/series?points=0", "/api/series?window_s=abc", "/api/series?points=100000",
        "/api/migrations?limit=-1", "/api/heat?since_ms=x"}) {
    const auto r = f.get(bad);
    CHECK(r.status == 400);
    const std::string message = r.body["error"]["message"].get<std::string>();
    CHECK(message.find(std::string(bad).substr(std::string(bad).find('?') + 1, 4)) !=
          std::string::npos);
  }
  const auto missing = f.get("/api/nothing");
  CHECK(missing.status == 404);
  CHECK(missing.body["error"]["code"] == "not_found");
}

TEST_CASE("http endpoint: /metrics has rounds, gate, ingest, database size and loop timings") {
  EndpointFixture f;
  (void)f.get("/api/status");
  const auto metrics = f.get("/metrics");
  REQUIRE(metrics.status == 200);
  const std::string& t = metrics.raw;
  CHECK(t.find("dancemoe_scheduler_rounds_total{outcome=\"adopted\"} 1\n") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_gate_seconds{term=\"migration\"}") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_reports_total{outcome=\"stored\"} 2\n") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_placement_version 1\n") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_nodes{state=\"up\"} 2\n") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_database_bytes ") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_node_local_hit_ratio{node=\"a\"} 0.6\n") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_loop_seconds_count{work=\"tick\"}") != std::string::npos);
  CHECK(t.find("dancemoe_scheduler_http_requests_total{route=\"/api/status\",status=\"200\"} 1") !=
        std::string::npos);
}

TEST_CASE("http endpoint: --insecure with --http-token: the page is public, the data needs it") {
  EndpointFixture f([](HttpEndpointOptions& o) { o.insecure_token = "s3cret"; });
  const auto page = f.get("/");
  CHECK(page.status == 200);
  CHECK(page.raw.find("<title>DanceMoE scheduler</title>") != std::string::npos);
  const auto js = f.get("/dashboard.js");
  CHECK(js.status == 200);
  CHECK(page.headers.find("Content-Security-Policy") != page.headers.end());
  for (const char* path : {"/api/status", "/metrics", "/api/series", "/api/heat"}) {
    CHECK(f.get(path, "wrong").status == 401);
    CHECK(f.get(path, "s3cret").status == 200);
    CHECK(f.get(path, "s3cret", "elsewhere.example").status == 200);
  }
  // The shared token grants every right, as --insecure grants everything.
  CHECK(f.post("/api/round", "{}").status == 401);
  CHECK(f.post("/api/round", "{}", "wrong").status == 401);
  CHECK(f.post("/api/round", "{}", "s3cret").status == 200);
}

TEST_CASE("http endpoint: with keys, members read and only operators act") {
  Keys k;
  EndpointFixture f([&k](HttpEndpointOptions& o) { o.keys = k.http(); });
  REQUIRE(f.started().is_ok());
  const std::string alice = k.token(k.alice);
  const std::string ws1 = k.token(k.ws1);

  // A local reader needs no key; a rebound DNS name without one is refused.
  CHECK(f.get("/api/status").status == 200);
  CHECK(f.get("/api/status", "", "attacker.example").status == 403);

  // Reads: a member's and an operator's key, under any Host name.
  for (const char* path : {"/api/status", "/api/nodes", "/metrics", "/api/heat"}) {
    CHECK(f.get(path, ws1, "scheduler.lab.example").status == 200);
    CHECK(f.get(path, alice, "scheduler.lab.example").status == 200);
    // A key nobody admitted, a token made for another scheduler, an altered one.
    const auto stranger = f.get(path, k.token(k.stranger));
    CHECK(stranger.status == 401);
    CHECK(stranger.body["error"]["message"].get<std::string>().find("not a member") !=
          std::string::npos);
    CHECK(f.get(path, *net::make_key_token(k.alice, k.stranger.public_key)).status == 401);
    // (The last hex digit changed; "0" alone left 1 token in 16 unaltered.)
    std::string altered = alice;
    altered.back() = altered.back() == '0' ? '1' : '0';
    CHECK(f.get(path, altered).status == 401);
  }

  // Acting: an operator only; a node's key is known but not allowed.
  const auto anonymous = f.post("/api/round", "{}");
  CHECK(anonymous.status == 401);
  CHECK(anonymous.body["error"]["message"].get<std::string>().find("operator") !=
        std::string::npos);
  const auto node = f.post("/api/round", "{}", ws1);
  CHECK(node.status == 403);
  CHECK(node.body["error"]["code"] == "forbidden");
  CHECK(f.post("/api/round", "{}", k.token(k.stranger)).status == 401);
  CHECK(f.get("/api/decisions").body["decisions"].size() == 1);  // nothing ran

  const auto round = f.post("/api/round", "{}", alice);
  REQUIRE(round.status == 200);
  CHECK(round.body["trigger"] == "on_demand");
  const auto decisions = f.get("/api/decisions");
  REQUIRE(decisions.body["decisions"].size() == 2);
  CHECK(decisions.body["decisions"][0]["trigger"] == "on_demand");
  CHECK(f.post("/api/round", "[1]", alice).status == 400);
  CHECK(f.post("/api/round", R"({"policy": "nope"})", alice).status == 400);

  // A revoked node key (KeyRing::revoke replaces the allowlist) reads no more.
  k.members->replace({k.alice.public_key});
  CHECK(f.get("/api/status", ws1).status == 401);
  CHECK(f.get("/api/status", alice).status == 200);
}

TEST_CASE("http endpoint: without a token only requests addressed to loopback names are answered") {
  EndpointFixture f;
  for (const char* host : {"127.0.0.1:8090", "localhost:8090", "[::1]:8090", "localhost"}) {
    CHECK(f.get("/api/status", "", host).status == 200);
  }
  // A page elsewhere whose DNS name now points at 127.0.0.1 (rebinding).
  const auto rebound = f.get("/api/status", "", "attacker.example:8090");
  CHECK(rebound.status == 403);
  CHECK(rebound.body["error"]["code"] == "forbidden");
  CHECK(f.get("/metrics", "", "attacker.example").status == 403);
  // A name that merely starts like a loopback address is a DNS name.
  CHECK(f.get("/api/status", "", "127.0.0.1.attacker.example").status == 403);
  CHECK(f.get("/", "", "attacker.example").status == 200);  // the page holds no data
}

TEST_CASE("http endpoint: another address than loopback needs keys or, --insecure, a token") {
  EndpointFixture open([](HttpEndpointOptions& o) { o.address = "0.0.0.0:0"; });
  REQUIRE_FALSE(open.started().is_ok());
  CHECK(open.started().status().message().find("--http-token") != std::string::npos);
  Keys k;
  EndpointFixture keyed([&k](HttpEndpointOptions& o) {
    o.address = "0.0.0.0:0";
    o.keys = k.http();
  });
  CHECK(keyed.started().is_ok());
}

}  // namespace dancemoe::scheduler::test
