// Faults with real processes (issue 5, "Faults"): a peer killed with
// SIGKILL while another node generates, a peer that sends garbage, and bad
// start-up input.
#include <doctest/doctest.h>

#include <future>
#include <random>
#include <thread>

#include "common/net/zmq_transport.h"
#include "tests/integration/node_cluster.h"
#include "tests/integration/openai_node.h"
#include "tests/support/process.h"
#include "tests/support/scheduler_process.h"  // eventually

namespace dancemoe::testing {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

struct TinyCluster {
  // `experts`: node id -> experts (every MoE layer); "all" is added as a reference.
  TinyCluster(const std::map<std::string, std::vector<int32_t>>& experts,
              const std::vector<std::string>& extra)
      : work("node_fault") {
    model = work.path() / "tiny";
    write_model(SyntheticModelSpec{}, model);
    const std::vector<int32_t> layers = moe_layers_of(model);
    PlacementSpec spec;
    spec.experts = experts;
    for (const auto& [id, list] : experts) {
      ports[id] = free_tcp_port();
      endpoints[id] = endpoint_of(ports[id]);
    }
    write_json(work.path() / "cluster.json", placement_json(spec, layers, 8, endpoints));
    PlacementSpec single;
    single.experts["all"] = {0, 1, 2, 3, 4, 5, 6, 7};
    ports["all"] = free_tcp_port();
    write_json(work.path() / "single.json",
               placement_json(single, layers, 8, {{"all", endpoint_of(ports["all"])}}));
    args = {"--precision", "f32", "--wire-dtype", "f32", "--call-timeout-ms", "300"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const auto& [id, list] : experts) start(id);
    std::vector<std::string> ref = args;
    ref.insert(ref.end(), {"--placement", (work.path() / "single.json").string()});
    reference =
        std::make_unique<NodeProcess>(work.path(), "all", node_args(model, ports["all"], ref));
    REQUIRE(reference->wait_ready());
  }
  void start(const std::string& id) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--placement", (work.path() / "cluster.json").string()});
    nodes[id] = std::make_unique<NodeProcess>(work.path(), id, node_args(model, ports[id], a));
    REQUIRE(nodes[id]->wait_ready());
  }

  TempDir work;
  std::filesystem::path model;
  std::map<std::string, int> ports;
  std::map<std::string, std::string> endpoints;
  std::vector<std::string> args;
  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
  std::unique_ptr<NodeProcess> reference;
};

}  // namespace

TEST_CASE("node faults: kill -9 of a peer mid-generation -> the request completes on replicas") {
  // Every expert on exactly two nodes.
  TinyCluster c({{"a", {0, 1, 2, 3, 4, 5}}, {"b", {4, 5, 6, 7, 0, 1}}, {"c", {2, 3, 6, 7}}}, {});
  const json request = greedy_request(random_prompt(10, 5), 4000);
  auto pending =
      std::async(std::launch::async, [&] { return c.nodes["a"]->post("/v1/generate", request); });
  // Once a is well into the generation (its counters move while it runs),
  // kill the peer it has been calling most: replica choice may leave the
  // other one idle, and killing an idle peer would show nothing.
  json stats;
  for (int i = 0; i < 2000; ++i) {
    stats = c.nodes["a"]->stats();
    if (stats["activations"]["total"]["tokens"].get<int64_t>() > 300) break;
    std::this_thread::sleep_for(2ms);
  }
  std::string victim = "b";
  int64_t most = -1;
  for (const json& peer : stats["peers"]) {
    if (peer["calls"].get<int64_t>() > most) {
      most = peer["calls"].get<int64_t>();
      victim = peer["node_id"].get<std::string>();
    }
  }
  REQUIRE(pending.wait_for(0s) == std::future_status::timeout);  // still generating
  c.nodes[victim]->process().kill();                             // SIGKILL
  auto [status, got] = pending.get();
  INFO(got.dump().substr(0, 400));
  REQUIRE(status == 200);
  const json want = c.reference->generate(request);
  CHECK(got["tokens"] == want["tokens"]);  // the replicas computed the same experts
  MESSAGE("a generated " << got["tokens"].size() << " tokens while " << victim << " (" << most
                         << " calls from a so far) was killed: " << got["remote_failures"]
                         << " failed remote calls retried, " << got["activations"]["offloaded"]
                         << " activations offloaded, " << got["decode_ms"].get<double>()
                         << " ms decode");
  CHECK(got["remote_failures"].get<int64_t>() >= 1);  // the victim really died during the request

  // The survivors keep serving, and agree with the reference.
  for (const std::string id : {"a", "b", "c"}) {
    if (id == victim) continue;
    const json again = c.nodes[id]->generate(greedy_request(random_prompt(10, 9), 64));
    CHECK(again["tokens"] ==
          c.reference->generate(greedy_request(random_prompt(10, 9), 64))["tokens"]);
    CHECK(c.nodes[id]->get("/health").first == 200);
  }
}

TEST_CASE("node faults: no replica and no offload cache -> a clear 503, then service resumes") {
  TinyCluster c({{"a", {0, 1, 2, 3}}, {"b", {4, 5, 6, 7}}}, {"--offload-cache", "0"});
  CHECK(c.nodes["a"]
            ->generate(greedy_request(random_prompt(10, 1), 16))["activations"]["remote"]
            .get<int64_t>() > 0);
  c.nodes["b"]->process().kill();
  const SteadyClock::time_point start = SteadyClock::now();
  auto [status, body] =
      c.nodes["a"]->post("/v1/generate", greedy_request(random_prompt(10, 2), 16));
  const auto took = SteadyClock::now() - start;
  CHECK(status == 503);
  const std::string message = body["error"]["message"].get<std::string>();
  MESSAGE("with the only holder dead: HTTP " << status << " after "
                                             << std::chrono::duration<double>(took).count()
                                             << " s: " << message);
  CHECK(body["error"]["code"] == "unavailable");
  CHECK(message.find("could not be computed") != std::string::npos);
  CHECK(message.find("--offload-cache 0") != std::string::npos);
  CHECK(took < 5s);
  CHECK(c.nodes["a"]->get("/health").first == 200);  // the process goes on

  c.start("b");  // back on the same port
  // a's link reconnects with back-off (at most ~2 s between attempts, then
  // the CURVE handshake): service resumes within that, not necessarily at
  // the first request.
  json again;
  CHECK(eventually(
      [&] {
        auto [code, answer] =
            c.nodes["a"]->post("/v1/generate", greedy_request(random_prompt(10, 3), 16));
        again = answer;
        return code == 200;
      },
      8s));
  CHECK(again["tokens"] ==
        c.reference->generate(greedy_request(random_prompt(10, 3), 16))["tokens"]);
}

TEST_CASE("node faults: with an offload cache a dead sole holder costs a load, not the request") {
  TinyCluster c({{"a", {0, 1, 2, 3}}, {"b", {4, 5, 6, 7}}}, {});
  c.nodes["b"]->process().kill();
  const json got = c.nodes["a"]->generate(greedy_request(random_prompt(10, 4), 32));
  CHECK(got["tokens"] == c.reference->generate(greedy_request(random_prompt(10, 4), 32))["tokens"]);
  CHECK(got["activations"]["offloaded"].get<int64_t>() > 0);
  const json s = c.nodes["a"]->stats();
  CHECK(s["offload"]["loads"].get<int64_t>() > 0);
  CHECK(s["offload"]["resident_bytes"].get<int64_t>() <=
        s["offload"]["capacity_bytes"].get<int64_t>());
}

TEST_CASE("node faults: a peer sending garbage gets Error replies and the node keeps serving") {
  TinyCluster c({{"a", {0, 1, 2, 3, 4, 5, 6, 7}}}, {});
  zmq::context_t context;
  // A member (it holds a member's key -- a's own): strangers get no
  // connection at all (security_test.cpp), members get Errors.
  Result<net::CurveKeyPair> member =
      net::read_secret_key_file(c.work.path() / "standalone-keys" / "a.key");
  REQUIRE(member.is_ok());
  net::SocketOptions options;
  options.curve = net::CurveOptions{*member, member->public_key};
  auto dealer = net::make_socket(context, zmq::socket_type::dealer, options);
  REQUIRE(dealer.is_ok());
  REQUIRE(net::connect(*dealer, c.nodes["a"]->expert_endpoint()).is_ok());
  std::mt19937 rng(7);
  int errors = 0;
  for (int i = 0; i < 20; ++i) {
    std::string junk(1 + rng() % 200, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    dealer->send(zmq::buffer(junk), zmq::send_flags::none);
    auto reply = net::receive_message(*dealer, 5s, false);
    REQUIRE(reply.has_value());
    REQUIRE(reply->envelope.is_ok());
    errors += std::holds_alternative<proto::Error>(reply->envelope->body);
  }
  // Well-formed but wrong: a layer that does not exist, a lying tensor frame.
  proto::Envelope e;
  proto::ExpertCall call;
  call.layer = 999;
  call.n_tokens = 1;
  call.hidden = 64;
  call.assignments = {{0, 1, 1.0f}};
  e.body = call;
  std::vector<uint8_t> frame(64 * 2);
  REQUIRE(net::send_message(*dealer, e, frame).is_ok());
  auto reply = net::receive_message(*dealer, 5s, false);
  REQUIRE(reply.has_value());
  CHECK(std::get<proto::Error>(reply->envelope->body).message.find("layer 999") !=
        std::string::npos);
  call.layer = 0;
  e.body = call;
  frame.resize(7);
  REQUIRE(net::send_message(*dealer, e, frame).is_ok());
  reply = net::receive_message(*dealer, 5s, false);
  REQUIRE(reply.has_value());
  CHECK(std::get<proto::Error>(reply->envelope->body).message.find("tensor frame") !=
        std::string::npos);
  CHECK(errors == 20);

  CHECK(c.nodes["a"]->generate(greedy_request(random_prompt(10, 8), 16))["tokens"].size() == 16);
  const json s = c.nodes["a"]->stats();
  CHECK(s["service"]["bad_messages"].get<int64_t>() == 22);
  CHECK(c.nodes["a"]->process().running());
}

TEST_CASE("node start-up: bad flags and a bad placement file exit 1 naming the problem") {
  TempDir work("node_startup");
  write_model(SyntheticModelSpec{}, work.path() / "tiny");
  const std::string model = (work.path() / "tiny").string();
  auto none = run_process({DMOE_NODE_PATH, "--model", model, "--node-id", "a"});
  CHECK(none.exit_code == 1);
  CHECK(none.err.find("exactly one of --scheduler") != std::string::npos);
  write_json(work.path() / "p.json",
             json::parse(R"({"nodes": {"a": {"expert_endpoint": "tcp://127.0.0.1:1",
                             "devices": {"cpu": [[1, 0]]}}}})"));
  auto dense = run_process({DMOE_NODE_PATH, "--model", model, "--node-id", "a", "--placement",
                            (work.path() / "p.json").string(), "--http", "127.0.0.1:0", "--experts",
                            "tcp://127.0.0.1:*", "--expert-memory", "64M", "--insecure"});
  CHECK(dense.exit_code == 1);
  CHECK(dense.err.find("p.json") != std::string::npos);
  CHECK(dense.err.find("dense layer") != std::string::npos);
  // A second node on this host without a budget refuses to take all of
  // its free memory, naming the other node and the flags to set.
  {
    OpenAiTestNode first;
    auto second = run_process({DMOE_NODE_PATH, "--model", model, "--node-id", "b", "--placement",
                               (work.path() / "p.json").string(), "--http", "127.0.0.1:0",
                               "--experts", "tcp://127.0.0.1:*", "--insecure"});
    CHECK(second.exit_code == 1);
    CHECK(second.err.find("another dancemoe-node (pid") != std::string::npos);
    CHECK(second.err.find("--expert-memory") != std::string::npos);
  }
  auto no_model =
      run_process({DMOE_NODE_PATH, "--model", (work.path() / "nope").string(), "--node-id", "a",
                   "--placement", (work.path() / "p.json").string(), "--insecure"});
  CHECK(no_model.exit_code == 1);
  CHECK(no_model.err.find("nope") != std::string::npos);
}

}  // namespace dancemoe::testing
