// Fuzz target: everything the scheduler does with bytes from its control
// socket -- the envelope decoder, then the service (model range checks,
// report storage in SQLite, registration, Ready/Abort handling, status
// queries with JSON arguments, placement rounds) -- must answer or drop any
// input and never crash. One service (in-memory SQLite, fake clock) lives
// across inputs, with two registered nodes and a committed placement, so
// mutated messages reach the code paths of a running cluster.
//
// Every input is delivered twice: as it is, from an unknown peer, and, when
// it decodes, re-stamped with the cluster id and a registered node's name
// so that it passes the membership checks and reaches the handlers. A second
// service runs with keys (docs/security.md): each input reaches it from an
// unknown key, and, re-stamped, from a node's key -- or, for a
// StatusRequest, the operator's -- so key bindings, members and nodes
// admit/revoke/forget are fuzzed too.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <span>

#include "common/net/curve_keys.h"
#include "common/proto/codec.h"
#include "scheduler/daemon/service.h"

namespace {

using namespace dancemoe;
using namespace dancemoe::scheduler;

// Keys for the secure service: node-a, node-b and an operator, in a fresh
// directory under the build tree; key_of[name] is the public key.
std::filesystem::path keys_dir() {
  return std::filesystem::path(DMOE_BUILD_DIR) /
         ("fuzz-scheduler-keys-" + std::to_string(::getpid()));
}

KeyRing make_keys(std::map<std::string, std::string>* key_of) {
  const std::filesystem::path dir = keys_dir();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "nodes");
  std::filesystem::create_directories(dir / "operators");
  for (const char* name : {"node-a", "node-b", "op"}) {
    Result<net::CurveKeyPair> pair = net::write_key_pair(dir / "secret", name);
    if (!pair.is_ok()) __builtin_trap();
    const std::filesystem::path to = std::string(name) == "op" ? dir / "operators" : dir / "nodes";
    if (!net::write_public_key_file(to, name, pair->public_key).is_ok()) __builtin_trap();
    (*key_of)[name] = pair->public_key;
  }
  Result<net::CurveKeyPair> stranger = net::generate_key_pair();
  if (!stranger.is_ok()) __builtin_trap();
  (*key_of)["stranger"] = stranger->public_key;
  Result<KeyRing> ring = KeyRing::load(dir / "nodes", dir / "operators");
  if (!ring.is_ok()) __builtin_trap();
  return std::move(*ring);
}

struct World {
  FakeClock clock;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<SchedulerService> service;
  uint64_t sequence = 0;
  std::map<std::string, std::string> key_of;  // empty: insecure

  explicit World(bool secure) {
    spdlog::set_level(spdlog::level::off);
    KeyRing keys = secure ? make_keys(&key_of) : KeyRing::insecure();
    store = store::Store::open(":memory:").value();
    ServiceOptions options;
    options.heartbeat_interval_ms = int64_t{1} << 40;  // nodes never expire
    options.cold_start_settle_ms = 0;
    options.prepare_timeout_ms = 1000;
    service = std::make_unique<SchedulerService>(
        options, ModelInfo::synthetic("model-tiny", 4, 8, 2, 1000, {0, 2, 3}), store.get(), &clock,
        std::move(keys));
    if (!service->start().is_ok()) __builtin_trap();
    for (const char* node : {"node-a", "node-b"}) {
      proto::Register reg;
      reg.node_id = node;
      reg.model_id = "model-tiny";
      reg.devices = {{"gpu0", 16000, 1e9, "cuda"}};
      deliver(std::string("r-") + node, envelope(node, reg), key(node));
    }
    clock.advance_ms(10);
    service->tick();
    // Commit the cold start so that rounds, proposals and Ready have a base.
    const auto out = service->take_outbox();
    for (const Outgoing& o : out) {
      if (const auto* p = std::get_if<proto::PlacementPrepare>(&o.envelope.body)) {
        const std::string node = o.routing_id.substr(2);
        deliver(o.routing_id, envelope(node, proto::Ready{p->version}), key(node));
      }
    }
    service->take_outbox();
    if (service->committed_version() == 0) __builtin_trap();
  }

  // DMOE_FUZZ_STATS=1 prints how far inputs got (to check the corpus reaches the handlers).
  ~World() {
    if (!key_of.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(keys_dir(), ec);
    }
    if (std::getenv("DMOE_FUZZ_STATS") == nullptr) return;
    std::fprintf(stderr, "%s\n", service->counters().to_json().dump(1).c_str());
  }

  proto::Envelope envelope(const std::string& sender, proto::Body body) {
    proto::Envelope env;
    env.cluster_id = "default";
    env.sender = sender;
    env.sequence = ++sequence;
    env.body = std::move(body);
    return env;
  }

  // The sender key of `name` ("" when insecure or unknown).
  std::string key(const std::string& name) const {
    const auto it = key_of.find(name);
    return it == key_of.end() ? std::string() : it->second;
  }

  void deliver(const std::string& routing_id, Result<proto::Envelope> envelope,
               const std::string& sender_key = {}) {
    net::ReceivedMessage message;
    message.routing_id = routing_id;
    message.envelope = std::move(envelope);
    message.sender_key = sender_key;
    service->handle(message);
    // Whatever the service answers must be encodable and decode again.
    for (const Outgoing& o : service->take_outbox()) {
      if (!proto::decode(proto::encode(o.envelope)).is_ok()) __builtin_trap();
    }
  }
};

}  // namespace

void run_one(World& world, const Result<proto::Envelope>& decoded) {
  world.deliver("r-unknown", decoded, world.key("stranger"));
  if (decoded.is_ok()) {
    proto::Envelope env = *decoded;
    const bool as_b = env.sequence % 2 == 1;
    env.cluster_id = "default";
    env.sender = as_b ? "node-b" : "node-a";
    // A Register keeps its own node id; the sender must match it.
    if (auto* reg = std::get_if<proto::Register>(&env.body)) reg->node_id = env.sender;
    // Queries come from the operator (who may change things), the rest
    // from the node the sender names.
    const bool query = std::holds_alternative<proto::StatusRequest>(env.body);
    world.deliver(as_b ? "r-node-b" : "r-node-a", std::move(env),
                  world.key(query  ? "op"
                            : as_b ? "node-b"
                                   : "node-a"));
  }
  world.clock.advance_ms(50);
  world.service->tick();
  for (const Outgoing& o : world.service->take_outbox()) {
    if (!proto::decode(proto::encode(o.envelope)).is_ok()) __builtin_trap();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World plain(false);
  static World secure(true);
  const Result<proto::Envelope> decoded = proto::decode(std::span<const uint8_t>(data, size));
  run_one(plain, decoded);
  run_one(secure, decoded);
  return 0;
}
