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
// so that it passes the membership checks and reaches the handlers.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>

#include "common/proto/codec.h"
#include "scheduler/daemon/service.h"

namespace {

using namespace dancemoe;
using namespace dancemoe::scheduler;

struct World {
  FakeClock clock;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<SchedulerService> service;
  uint64_t sequence = 0;

  World() {
    spdlog::set_level(spdlog::level::off);
    store = store::Store::open(":memory:").value();
    ServiceOptions options;
    options.heartbeat_interval_ms = int64_t{1} << 40;  // nodes never expire
    options.cold_start_settle_ms = 0;
    options.prepare_timeout_ms = 1000;
    service = std::make_unique<SchedulerService>(
        options, ModelInfo::synthetic("model-tiny", 4, 8, 2, 1000, {0, 2, 3}), store.get(), &clock);
    if (!service->start().is_ok()) __builtin_trap();
    for (const char* node : {"node-a", "node-b"}) {
      proto::Register reg;
      reg.node_id = node;
      reg.model_id = "model-tiny";
      reg.devices = {{"gpu0", 16000, 1e9, "cuda"}};
      deliver(std::string("r-") + node, envelope(node, reg));
    }
    clock.advance_ms(10);
    service->tick();
    // Commit the cold start so that rounds, proposals and Ready have a base.
    const auto out = service->take_outbox();
    for (const Outgoing& o : out) {
      if (const auto* p = std::get_if<proto::PlacementPrepare>(&o.envelope.body)) {
        deliver(o.routing_id, envelope(o.routing_id.substr(2), proto::Ready{p->version}));
      }
    }
    service->take_outbox();
    if (service->committed_version() == 0) __builtin_trap();
  }

  // DMOE_FUZZ_STATS=1 prints how far inputs got (to check the corpus reaches the handlers).
  ~World() {
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

  void deliver(const std::string& routing_id, Result<proto::Envelope> envelope) {
    net::ReceivedMessage message;
    message.routing_id = routing_id;
    message.envelope = std::move(envelope);
    service->handle(message);
    // Whatever the service answers must be encodable and decode again.
    for (const Outgoing& o : service->take_outbox()) {
      if (!proto::decode(proto::encode(o.envelope)).is_ok()) __builtin_trap();
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  Result<proto::Envelope> decoded = proto::decode(std::span<const uint8_t>(data, size));
  world.deliver("r-unknown", decoded);
  if (decoded.is_ok()) {
    proto::Envelope env = *decoded;
    const bool as_b = env.sequence % 2 == 1;
    env.cluster_id = "default";
    env.sender = as_b ? "node-b" : "node-a";
    // A Register keeps its own node id; the sender must match it.
    if (auto* reg = std::get_if<proto::Register>(&env.body)) reg->node_id = env.sender;
    world.deliver(as_b ? "r-node-b" : "r-node-a", std::move(env));
  }
  world.clock.advance_ms(50);
  world.service->tick();
  for (const Outgoing& o : world.service->take_outbox()) {
    if (!proto::decode(proto::encode(o.envelope)).is_ok()) __builtin_trap();
  }
  return 0;
}
