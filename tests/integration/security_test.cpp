// Every attack of issue 13's probe against a secure cluster -- the real
// scheduler and real nodes on 127.0.0.1 with CurveZMQ keys -- each asserted
// to fail and to change nothing (docs/security.md lists them with their
// outcome):
//   - registering a fake node, and re-registering a real node's id
//     (a stranger; another member's key);
//   - placement round / apply as a stranger and as a node;
//   - reading the cluster's status as a stranger;
//   - expert calls and weight downloads from a stranger, and from a node
//     whose key was revoked (refused within one heartbeat);
//   - a member holding every expert answering with NaN / Inf.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

#include "common/model/checkpoint.h"
#include "common/net/zap_handler.h"
#include "common/net/zmq_transport.h"
#include "tests/integration/node_cluster.h"
#include "tests/integration/scheduler_fixtures.h"
#include "tests/support/process.h"

namespace dancemoe::testing {
namespace {

using namespace std::chrono_literals;

// Runs `body` on a thread until destroyed (also when a REQUIRE throws).
class Background {
 public:
  explicit Background(std::function<void(const std::atomic<bool>& stop)> body)
      : thread_([this, body = std::move(body)] { body(stop_); }) {}
  ~Background() {
    stop_.store(true);
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A DEALER of its own: plain (nullopt) or CURVE with some key.
class Probe {
 public:
  Probe(const std::string& endpoint, std::optional<net::CurveOptions> curve) {
    net::SocketOptions options;
    options.curve = std::move(curve);
    // A refused connection leaves nowhere to queue a message: a send then
    // waits out this timeout (an attacker's problem, not the server's).
    options.send_timeout = std::chrono::milliseconds(200);
    auto socket = net::make_socket(context_, zmq::socket_type::dealer, options);
    REQUIRE(socket.is_ok());
    socket_ = std::move(*socket);
    REQUIRE(net::connect(socket_, endpoint).is_ok());
  }
  // The first answer within `timeout`, or nullopt (no answer: the attack got nothing).
  std::optional<proto::Envelope> ask(proto::Body body, const std::vector<uint8_t>& payload = {},
                                     std::chrono::milliseconds timeout = 800ms) {
    proto::Envelope e;
    e.cluster_id = "default";
    // A Register names its node as the sender, as a node's does.
    const auto* reg = std::get_if<proto::Register>(&body);
    e.sender = reg != nullptr ? reg->node_id : "probe";
    e.sequence = ++sequence_;
    e.body = std::move(body);
    (void)net::send_message(socket_, e, payload);
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      auto m = net::receive_message(socket_,
                                    std::chrono::duration_cast<std::chrono::milliseconds>(
                                        until - std::chrono::steady_clock::now()),
                                    false);
      if (!m || !m->envelope.is_ok()) continue;
      // Members and placements a scheduler pushes are not answers.
      if (std::holds_alternative<proto::Members>(m->envelope->body)) continue;
      return *m->envelope;
    }
    return std::nullopt;
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  uint64_t sequence_ = 0;
};

net::CurveOptions stranger_to(const std::string& server_public_key) {
  return net::CurveOptions{*net::generate_key_pair(), server_public_key};
}

struct SecureCluster {
  explicit SecureCluster(const std::vector<std::string>& ids, double memory_fraction = 0.55)
      : work("security") {
    model = work.path() / "tiny";
    write_model(SyntheticModelSpec{}, model);
    layers = moe_layers_of(model);
    auto checkpoint = Checkpoint::open(model);
    REQUIRE(checkpoint.is_ok());
    model_id = (*checkpoint)->model_id();
    scheduler = std::make_unique<SchedulerProcess>(
        DMOE_SCHEDULER_PATH, work.path(),
        std::vector<std::string>{"--model", model.string(), "--heartbeat-interval", "0.2",
                                 "--report-interval", "0.4", "--cold-start-settle", "0.5",
                                 "--prepare-timeout", "30", "--interval", "3600"});
    scheduler->start();
    const auto memory = static_cast<uint64_t>(memory_fraction * 24 * 3 * 64 * 32 * 2);
    for (const std::string& id : ids) {
      std::vector<std::string> extra = {"--scheduler",     scheduler->endpoint(),
                                        "--expert-memory", std::to_string(memory),
                                        "--precision",     "f32"};
      for (const std::string& a : scheduler->node_args(id)) extra.push_back(a);
      nodes[id] =
          std::make_unique<NodeProcess>(work.path(), id, node_args(model, free_tcp_port(), extra));
    }
    for (auto& [id, node] : nodes) REQUIRE(node->wait_ready());
    REQUIRE(eventually(
        [&] {
          for (auto& [id, node] : nodes) {
            if (node->stats()["placement_version"].get<uint64_t>() < 1) return false;
          }
          return true;
        },
        60s));
  }

  json query(const std::string& what, const json& args = json::object()) {
    auto r = scheduler_query(*scheduler, what, args);
    INFO((r.is_ok() ? std::string() : r.status().to_string()));
    REQUIRE(r.is_ok());
    return *r;
  }
  // What an attack must not change: who the nodes are and where they are,
  // the committed placement, and the recorded decisions.
  json snapshot() {
    json nodes_now = json::array();
    for (const json& n : query("nodes")["nodes"]) {
      nodes_now.push_back({n["id"], n["state"], n["expert_endpoint"], n["key"]});
    }
    const json status = query("status");
    return {{"nodes", nodes_now},
            {"placement", status["placement"].value("version", uint64_t{0})},
            {"migrations", query("migrations")}};
  }
  std::string key_of(const std::string& id) { return scheduler->keys().pair(id).public_key; }
  // A member's client options towards node `id`'s expert service.
  net::CurveOptions member_to_node(const std::string& member, const std::string& id) {
    return net::CurveOptions{scheduler->keys().pair(member), key_of(id)};
  }

  TempDir work;
  std::filesystem::path model;
  std::string model_id;
  std::vector<int32_t> layers;
  std::unique_ptr<SchedulerProcess> scheduler;
  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
};

proto::Register fake_register(const SecureCluster& c, const std::string& id,
                              const std::string& endpoint) {
  proto::Register r;
  r.node_id = id;
  r.model_id = c.model_id;
  r.devices = {{"gpu0", 1ull << 30, 1e9, "cuda"}};
  r.expert_endpoint = endpoint;
  return r;
}

// An ExpertCall for one token of `layer` to `expert`, with its f32 payload.
std::pair<proto::ExpertCall, std::vector<uint8_t>> expert_call(int32_t layer, int32_t expert) {
  proto::ExpertCall call;
  call.call_id = 1;
  call.layer = static_cast<uint16_t>(layer);
  call.n_tokens = 1;
  call.hidden = 64;
  call.dtype = DType::kF32;
  call.assignments = {{0, static_cast<uint16_t>(expert), 1.0f}};
  std::vector<float> x(64, 0.25f);
  std::vector<uint8_t> payload(x.size() * 4);
  std::memcpy(payload.data(), x.data(), payload.size());
  return {call, payload};
}

// An expert node `id` holds in the committed placement.
ExpertRef held_by(const json& placement, const std::string& id) {
  const auto experts = experts_of(placement, id);
  REQUIRE_FALSE(experts.empty());
  return experts.front();
}

json greedy_request(uint32_t seed) {
  std::vector<int32_t> prompt;
  for (uint32_t i = 0; i < 10; ++i)
    prompt.push_back(static_cast<int32_t>(3 + (seed * 97 + i * 31) % 500));
  return {{"prompt_tokens", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
}

}  // namespace

TEST_CASE(
    "security: a stranger can register nothing, re-point nothing, run nothing, read nothing") {
  SecureCluster c({"a", "b"});
  const json before = c.snapshot();
  const std::string scheduler_key = c.scheduler->keys().scheduler_pair().public_key;
  for (const bool with_key : {false, true}) {
    CAPTURE(with_key);
    Probe stranger(c.scheduler->endpoint(),
                   with_key ? std::optional(stranger_to(scheduler_key)) : std::nullopt);
    // A fake node, and a real node's id re-pointed at the stranger.
    CHECK_FALSE(stranger.ask(fake_register(c, "evil", "tcp://10.6.6.6:5551")).has_value());
    CHECK_FALSE(stranger.ask(fake_register(c, "a", "tcp://10.6.6.6:5551")).has_value());
    // Placement round and apply; status and nodes.
    CHECK_FALSE(stranger.ask(proto::StatusRequest{"round", "{}"}).has_value());
    CHECK_FALSE(
        stranger.ask(proto::StatusRequest{"apply", R"({"policy": "uniform"})"}).has_value());
    CHECK_FALSE(stranger.ask(proto::StatusRequest{"status", "{}"}).has_value());
    CHECK_FALSE(stranger.ask(proto::StatusRequest{"nodes", "{}"}).has_value());
  }
  // The CLI without keys, and with a key the scheduler does not know.
  auto plain = run_process({DMOE_CLI_PATH, "status", "--scheduler", c.scheduler->endpoint(),
                            "--insecure", "--timeout", "0.5"});
  CHECK(plain.exit_code == 1);
  CHECK(plain.err.find("no answer from the scheduler") != std::string::npos);
  REQUIRE(net::write_key_pair(c.work.path() / "mallory", "mallory").is_ok());
  auto unknown =
      run_process({DMOE_CLI_PATH, "placement", "round", "--scheduler", c.scheduler->endpoint(),
                   "--key", (c.work.path() / "mallory" / "mallory.key").string(), "--scheduler-key",
                   c.scheduler->keys().scheduler_public().string(), "--timeout", "0.5"});
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.err.find("does not admit the key") != std::string::npos);
  CHECK(c.snapshot() == before);
}

TEST_CASE("security: a member re-registering another id, or changing the cluster, is refused") {
  SecureCluster c({"a", "b"});
  const json before = c.snapshot();
  // b's key on a new connection: re-register a at another endpoint; register a fake node.
  Probe b(c.scheduler->endpoint(), c.scheduler->keys().to_scheduler(c.scheduler->keys().pair("b")));
  auto reply = b.ask(fake_register(c, "a", "tcp://10.6.6.6:5551"));
  REQUIRE(reply.has_value());
  const auto* refused = std::get_if<proto::RegisterReply>(&reply->body);
  REQUIRE(refused != nullptr);
  INFO(refused->reason);
  CHECK_FALSE(refused->accepted);
  CHECK(refused->reason.find("node id 'a' is bound to key 'a'") != std::string::npos);
  reply = b.ask(fake_register(c, "evil", "tcp://10.6.6.6:5551"));
  REQUIRE(reply.has_value());
  CHECK_FALSE(std::get<proto::RegisterReply>(reply->body).accepted);
  // Round and apply with a node key: refused with the reason; status readable.
  for (const char* what : {"round", "apply"}) {
    reply = b.ask(proto::StatusRequest{what, "{}"});
    REQUIRE(reply.has_value());
    const auto* error = std::get_if<proto::Error>(&reply->body);
    REQUIRE(error != nullptr);
    CHECK(error->message.find("needs an operator key") != std::string::npos);
  }
  reply = b.ask(proto::StatusRequest{"status", "{}"});
  REQUIRE(reply.has_value());
  CHECK(std::holds_alternative<proto::StatusReply>(reply->body));
  // The CLI with a node's key.
  auto cli =
      run_process({DMOE_CLI_PATH, "placement", "apply", "--policy", "uniform", "--scheduler",
                   c.scheduler->endpoint(), "--key", c.scheduler->keys().secret("b").string(),
                   "--scheduler-key", c.scheduler->keys().scheduler_public().string()});
  CHECK(cli.exit_code != 0);
  CHECK(cli.err.find("needs an operator key") != std::string::npos);
  CHECK(c.snapshot() == before);
  // The operator may.
  auto round = run_process(c.scheduler->cli_command({DMOE_CLI_PATH, "placement", "round"}));
  INFO(round.err);
  CHECK(round.exit_code == 0);
}

TEST_CASE(
    "security: expert calls and weights -- strangers get nothing, a revoked node within a "
    "heartbeat") {
  SecureCluster c({"a", "b"});
  const json placement = c.query("placement");
  const ExpertRef mine = held_by(placement, "a");
  const std::string a_endpoint = c.nodes["a"]->expert_endpoint();
  const auto [call, payload] = expert_call(mine.layer, mine.expert);
  const proto::ExpertWeightsRequest weights{static_cast<uint16_t>(mine.layer),
                                            static_cast<uint16_t>(mine.expert), 0, 1 << 20};
  for (const bool with_key : {false, true}) {
    CAPTURE(with_key);
    Probe stranger(a_endpoint, with_key ? std::optional(stranger_to(c.key_of("a"))) : std::nullopt);
    CHECK_FALSE(stranger.ask(call, payload).has_value());
    CHECK_FALSE(stranger.ask(weights).has_value());
  }
  // A member (b's key) is served.
  Probe b(a_endpoint, c.member_to_node("b", "a"));
  auto served = b.ask(call, payload, 5s);
  REQUIRE(served.has_value());
  REQUIRE(std::holds_alternative<proto::ExpertResult>(served->body));
  served = b.ask(weights, {}, 5s);
  REQUIRE(served.has_value());
  REQUIRE(std::holds_alternative<proto::ExpertWeightsChunk>(served->body));

  // The operator revokes b; within one heartbeat (0.2 s) a refuses b -- on
  // the connection already open, and on a new one.
  auto revoked = run_process(c.scheduler->cli_command({DMOE_CLI_PATH, "nodes", "revoke", "b"}));
  INFO(revoked.err);
  REQUIRE(revoked.exit_code == 0);
  CHECK(revoked.out.find("node 'b' is down") != std::string::npos);
  std::this_thread::sleep_for(200ms);
  CHECK_FALSE(b.ask(call, payload).has_value());
  CHECK_FALSE(b.ask(weights).has_value());
  Probe b_again(a_endpoint, c.member_to_node("b", "a"));
  CHECK_FALSE(b_again.ask(call, payload).has_value());
  // Counted when refused on a live connection (a new one never gets past ZAP).
  CHECK(c.nodes["a"]->stats()["service"]["refused"].get<int64_t>() >= 2);
  // b is down at the scheduler, and its key no longer gets answers there.
  const json nodes = c.query("nodes");
  for (const json& n : nodes["nodes"]) {
    if (n["id"] == "b") CHECK(n["state"] == "down");
  }
  Probe b_scheduler(c.scheduler->endpoint(),
                    c.scheduler->keys().to_scheduler(c.scheduler->keys().pair("b")));
  CHECK_FALSE(b_scheduler.ask(proto::StatusRequest{"status", "{}"}).has_value());
  // a still answers its members and its own prompts.
  CHECK(c.nodes["a"]->generate(greedy_request(3))["tokens"].size() == 12);
}

TEST_CASE("security: a member answering with NaN or Inf is never added into an answer") {
  SecureCluster c({"a"}, 1.1);
  // The evil member: an admitted key whose expert service answers every
  // call with NaN (then Inf), and which the operator gives every expert.
  const std::optional<net::CurveOptions> evil_curve = c.scheduler->node_curve("evil");
  REQUIRE(evil_curve.has_value());
  zmq::context_t context(1);
  auto allowed = std::make_shared<net::KeyAllowlist>();
  allowed->replace({c.key_of("a")});
  auto zap = net::ZapHandler::start(context, allowed);
  REQUIRE(zap.is_ok());
  net::SocketOptions server;
  server.curve = net::CurveOptions{evil_curve->own, {}};
  auto router = net::make_socket(context, zmq::socket_type::router, server);
  REQUIRE(router.is_ok());
  REQUIRE(net::bind(*router, "tcp://127.0.0.1:*").is_ok());
  std::atomic<int> poisoned{0};
  Background poisoner([&](const std::atomic<bool>& stop) {
    while (!stop.load()) {
      auto m = net::receive_message(*router, 50ms, /*router=*/true);
      if (!m || !m->envelope.is_ok()) continue;
      const auto* call = std::get_if<proto::ExpertCall>(&m->envelope->body);
      if (call == nullptr) continue;
      const float bad =
          poisoned.fetch_add(1) % 2 == 0 ? std::nanf("") : std::numeric_limits<float>::infinity();
      std::vector<float> rows(static_cast<size_t>(call->n_tokens) * call->hidden, bad);
      std::vector<uint8_t> bytes(rows.size() * 4);
      std::memcpy(bytes.data(), rows.data(), bytes.size());
      proto::Envelope e;
      e.sender = "evil";
      e.body = proto::ExpertResult{call->call_id, call->n_tokens, call->hidden, DType::kF32, 1};
      (void)net::send_message(*router, e, bytes, m->routing_id);
    }
  });
  PeerOptions o;
  o.scheduler = c.scheduler->endpoint();
  o.curve = evil_curve;
  o.node_id = "evil";
  o.model_id = c.model_id;
  o.devices = {{"gpu0", 1ull << 30, 1e9, "cuda"}};
  o.expert_endpoint = net::last_endpoint(*router);
  ProtocolPeer evil(o);
  evil.start();
  REQUIRE(evil.wait_registered(10s) == true);
  json all = json::array();
  for (int32_t l : c.layers) {
    for (int32_t e = 0; e < 8; ++e) all.push_back({l, e});
  }
  const json takeover = {
      {"nodes",
       {{"a", {{"devices", {{"cpu", json::array()}}}}}, {"evil", {{"devices", {{"gpu0", all}}}}}}}};
  c.query("apply", {{"placement", takeover}});
  REQUIRE(evil.wait_committed(2, 30s));
  REQUIRE(eventually([&] { return c.nodes["a"]->stats()["placement_version"] == 2; }, 30s));

  // The reference: one standalone node holding every expert.
  const int port = free_tcp_port();
  PlacementSpec single;
  single.experts["all"] = {0, 1, 2, 3, 4, 5, 6, 7};
  write_json(c.work.path() / "single.json",
             placement_json(single, c.layers, 8, {{"all", endpoint_of(port)}}));
  NodeProcess reference(
      c.work.path(), "all",
      node_args(c.model, port,
                {"--precision", "f32", "--placement", (c.work.path() / "single.json").string()}));
  REQUIRE(reference.wait_ready());
  for (uint32_t seed : {1u, 2u}) {
    const json got = c.nodes["a"]->generate(greedy_request(seed));
    const json want = reference.generate(greedy_request(seed));
    CHECK(got["tokens"] == want["tokens"]);
    CHECK(got["activations"]["offloaded"].get<int64_t>() > 0);
  }
  CHECK(poisoned.load() >= 1);
  evil.stop();
}

}  // namespace dancemoe::testing
