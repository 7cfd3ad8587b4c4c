#include "edge_node/agent/scheduler_link.h"

#include <doctest/doctest.h>

#include <functional>
#include <thread>

#include "common/net/zmq_transport.h"
#include "common/runtime/clock.h"
#include "tests/edge_node/node_test_support.h"

namespace dancemoe::node {
namespace {

using namespace std::chrono_literals;

// The link runs on a FakeClock. While a test waits for a message, fake time
// follows real time (kReceiveStep per empty receive); where a test needs
// time to pass -- a report window, missed heartbeats -- advance_until()
// moves it ahead in kFakeStep jumps, each given a real millisecond so the
// link's thread sees it. Every wait is bounded in real time.
constexpr auto kReceiveStep = 2ms;
constexpr auto kFakeStep = 10ms;

// A test protocol peer: the scheduler's side of the real protocol over a
// real ROUTER socket, driven step by step by the test.
class ProtocolPeer {
 public:
  ProtocolPeer(zmq::context_t& context, const std::string& endpoint, FakeClock& clock)
      : clock_(clock) {
    auto s = net::make_socket(context, zmq::socket_type::router);
    REQUIRE(s.is_ok());
    socket_ = std::move(s).value();
    // A restarted peer reuses the port, which ZeroMQ frees asynchronously.
    bool bound = false;
    for (int i = 0; i < 100 && !bound; ++i) {
      bound = net::bind(socket_, endpoint).is_ok();
      if (!bound) std::this_thread::sleep_for(20ms);
    }
    REQUIRE(bound);
    endpoint_ = net::last_endpoint(socket_);
  }
  const std::string& endpoint() const { return endpoint_; }

  // The next message of type T within `timeout` (real time); others are
  // recorded and skipped. Fake time advances while nothing arrives.
  template <typename T>
  std::optional<std::pair<proto::Envelope, T>> expect(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      auto m = net::receive_message(socket_, kReceiveStep, true);
      if (!m) clock_.advance_ms(kReceiveStep.count());
      if (!m || !m->envelope.is_ok()) continue;
      node_ = m->routing_id;
      const proto::Envelope& e = *m->envelope;
      if (std::holds_alternative<proto::Heartbeat>(e.body)) ++heartbeats;
      if (const auto* t = std::get_if<T>(&e.body)) return std::make_pair(e, *t);
    }
    return std::nullopt;
  }
  // Discards what arrives within `window` of real time, fake time standing
  // still: messages the link sent before the point the test is at.
  void drain(std::chrono::milliseconds window) {
    const auto until = std::chrono::steady_clock::now() + window;
    while (std::chrono::steady_clock::now() < until)
      net::receive_message(socket_, kReceiveStep, true);
  }
  void send(proto::Body body) {
    proto::Envelope e;
    e.sender = "scheduler";
    e.sequence = ++sequence_;
    e.body = std::move(body);
    REQUIRE(net::send_message(socket_, e, {}, node_).is_ok());
  }
  void accept(uint32_t heartbeat_ms) {
    send(proto::RegisterReply{true, "", heartbeat_ms, 60000, 0});
  }
  uint64_t last_sequence() const { return sequence_; }

  int heartbeats = 0;

 private:
  FakeClock& clock_;
  zmq::socket_t socket_;
  std::string endpoint_;
  std::string node_;
  uint64_t sequence_ = 0;
};

struct LinkFixture {
  LinkFixture()
      : store(*model.checkpoint), table(HolderTable::empty(model.config())), log(model.config()) {
    MigrationOptions m;
    m.node_id = "a";
    migration = std::make_unique<MigrationExecutor>(*model.checkpoint, store, table, log, context,
                                                    m, [] { return false; });
  }
  void start_link(const std::string& endpoint) {
    SchedulerLinkOptions o;
    o.endpoint = endpoint;
    o.node_id = "a";
    o.report_interval = 100ms;
    o.report_interval_from_flag = true;
    o.register_timeout = 300ms;
    o.max_backoff = 300ms;
    o.clock = &clock;
    link = std::make_unique<SchedulerLink>(
        context, o,
        [this] {
          proto::Register r;
          r.node_id = "a";
          r.model_id = model.checkpoint->model_id();
          r.devices.push_back({"cpu", 1 << 30, 1e9, "cpu"});
          r.placement_version = migration->committed_version();
          return r;
        },
        *migration, log, [] { return 0u; });
    link->start();
  }
  void activity() {
    RoutingDecision r;
    r.n_tokens = 1;
    r.top_k = 2;
    r.expert_ids = {2, 5};
    r.weights = {0.5f, 0.5f};
    log.record_tokens(1);  // a whole forward: reports carry whole forwards only
    for (int32_t l : model.moe_layers()) log.record_layer(l, r, 1, 0);
  }

  // Lets fake time pass in steps until `done` (false if it never is within
  // `limit` of fake time).
  bool advance_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
    for (auto passed = 0ms; passed < limit; passed += kFakeStep) {
      if (done()) return true;
      clock.advance_ms(kFakeStep.count());
      std::this_thread::sleep_for(1ms);  // the link's thread looks at the new time
    }
    return done();
  }

  // Starts at the real wall time: the activation log opened its first window then.
  FakeClock clock{SystemClock().wall_ms()};
  test_support::TinyModel model;
  zmq::context_t context;
  ExpertStore store;
  HolderTableHandle table;
  ActivationLog log;
  std::unique_ptr<MigrationExecutor> migration;
  std::unique_ptr<SchedulerLink> link;
};

}  // namespace

TEST_CASE("scheduler link: registers, heartbeats and reports -- acked reports leave the buffer") {
  LinkFixture f;
  ProtocolPeer scheduler(f.context, "tcp://127.0.0.1:*", f.clock);
  f.start_link(scheduler.endpoint());
  auto reg = scheduler.expect<proto::Register>(5s);
  REQUIRE(reg);
  CHECK(reg->second.node_id == "a");
  CHECK(reg->second.model_id == f.model.checkpoint->model_id());
  REQUIRE(reg->second.devices.size() == 1);
  CHECK(reg->second.devices[0].name == "cpu");
  scheduler.accept(50);
  f.activity();
  auto report = scheduler.expect<proto::ActivationReport>(5s);
  REQUIRE(report);
  CHECK(scheduler.heartbeats >= 1);
  const size_t n_moe = f.model.moe_layers().size();
  REQUIRE(report->second.counts.size() == 2 * n_moe);
  CHECK(report->second.counts[0] == proto::ExpertCount{0, 2, 1});
  CHECK(report->second.tokens == 1);
  CHECK(report->second.local_hits == n_moe);
  scheduler.send(proto::Ack{report->first.sequence});
  REQUIRE(f.advance_until([&] { return f.link->status().reports_acked > 0; }));
  const LinkStatus s = f.link->status();
  CHECK(s.attached);
  CHECK(s.reports_acked == 1);
  CHECK(s.reports_pending == 0);
}

TEST_CASE("scheduler link: a scheduler that goes away gets the unacked reports again on return") {
  LinkFixture f;
  std::string endpoint;
  uint64_t unacked = 0;
  {
    ProtocolPeer first(f.context, "tcp://127.0.0.1:*", f.clock);
    endpoint = first.endpoint();
    f.start_link(endpoint);
    REQUIRE(first.expect<proto::Register>(5s));
    first.accept(50);
    f.activity();
    auto report = first.expect<proto::ActivationReport>(5s);
    REQUIRE(report);
    unacked = report->first.sequence;  // never acked: the scheduler "crashes"
  }
  // Heartbeats go unanswered: the link notices and keeps re-registering.
  CHECK(f.advance_until([&] { return !f.link->status().attached; }));
  f.activity();  // more statistics while the scheduler is down
  // A report window passes while the scheduler is down.
  CHECK(f.advance_until([&] { return f.link->status().reports_pending >= 2; }));
  ProtocolPeer second(f.context, endpoint, f.clock);  // restarted on the same port
  REQUIRE(second.expect<proto::Register>(5s));
  second.accept(50);
  std::vector<uint64_t> seen;
  while (auto r = second.expect<proto::ActivationReport>(1s)) {
    seen.push_back(r->first.sequence);
    second.send(proto::Ack{r->first.sequence});
  }
  CHECK(std::find(seen.begin(), seen.end(), unacked) != seen.end());
  CHECK(seen.size() >= 2);  // the old one and the window recorded while away
  CHECK(f.link->status().registrations == 2);
}

TEST_CASE(
    "scheduler link: prepare -> ready, commit -> ack and the new table, bad placement aborts") {
  LinkFixture f;
  ProtocolPeer scheduler(f.context, "tcp://127.0.0.1:*", f.clock);
  f.start_link(scheduler.endpoint());
  REQUIRE(scheduler.expect<proto::Register>(5s));
  scheduler.accept(200);
  const ClusterPlacement v1 = test_support::make_placement(
      1, {{"a", "tcp://127.0.0.1:1", {0, 1}}, {"b", "tcp://127.0.0.1:2", {2, 3, 4, 5, 6, 7}}},
      f.model.moe_layers());
  scheduler.send(v1);
  auto ready = scheduler.expect<proto::Ready>(5s);
  REQUIRE(ready);
  CHECK(ready->second.version == 1);
  CHECK(f.table.get()->version() == 0);  // not before commit
  scheduler.send(proto::Commit{1});
  const uint64_t commit_seq = scheduler.last_sequence();
  auto ack = scheduler.expect<proto::Ack>(5s);
  REQUIRE(ack);
  CHECK(ack->second.sequence == commit_seq);
  CHECK(f.table.get()->version() == 1);
  CHECK(f.store.n_resident() == static_cast<int64_t>(2 * f.model.moe_layers().size()));

  proto::PlacementPrepare bad =
      (test_support::make_placement(2, {{"a", "tcp://127.0.0.1:1", {0}}}, f.model.moe_layers()));
  bad.nodes[0].devices[0].experts.push_back({1, 0});  // a dense layer
  scheduler.send(bad);
  auto abort = scheduler.expect<proto::Abort>(5s);
  REQUIRE(abort);
  CHECK(abort->second.version == 2);
  CHECK(abort->second.reason.find("dense layer") != std::string::npos);
  scheduler.send(proto::Commit{7});
  auto refused = scheduler.expect<proto::Error>(5s);
  REQUIRE(refused);
  CHECK(refused->second.code == StatusCode::kFailedPrecondition);
  CHECK(f.table.get()->version() == 1);
}

TEST_CASE("scheduler link: a refusal is final and carries the scheduler's reason") {
  LinkFixture f;
  ProtocolPeer scheduler(f.context, "tcp://127.0.0.1:*", f.clock);
  f.start_link(scheduler.endpoint());
  REQUIRE(scheduler.expect<proto::Register>(5s));
  scheduler.send(
      proto::RegisterReply{false, "model id abc differs from the cluster's def", 0, 0, 0});
  CHECK(f.advance_until([&] { return f.link->refused(); }));
  CHECK(f.link->status().reason == "model id abc differs from the cluster's def");
  // A loaded machine may let the register timeout pass (fake time runs 10x
  // real time above) before the link reads the answer: that retry went out
  // before the refusal, and is not one after it.
  scheduler.drain(100ms);
  CHECK_FALSE(scheduler.expect<proto::Register>(700ms));  // no retry
}

TEST_CASE("scheduler link: an Error in reply to the Register is a final refusal") {
  LinkFixture f;
  ProtocolPeer scheduler(f.context, "tcp://127.0.0.1:*", f.clock);
  f.start_link(scheduler.endpoint());
  auto reg = scheduler.expect<proto::Register>(5s);
  REQUIRE(reg);
  // What the scheduler answers a node of another cluster.
  scheduler.send(proto::Error{StatusCode::kFailedPrecondition,
                              "cluster id 'lab2' (a) != 'default' (scheduler)",
                              reg->first.sequence});
  CHECK(f.advance_until([&] { return f.link->refused(); }));
  CHECK(f.link->status().reason.find("cluster id 'lab2'") != std::string::npos);
  // A loaded machine may let the register timeout pass (fake time runs 10x
  // real time above) before the link reads the answer: that retry went out
  // before the refusal, and is not one after it.
  scheduler.drain(100ms);
  CHECK_FALSE(scheduler.expect<proto::Register>(700ms));  // no retry
}

TEST_CASE("scheduler link: a busy scheduler's Error to the Register is retried") {
  LinkFixture f;
  ProtocolPeer scheduler(f.context, "tcp://127.0.0.1:*", f.clock);
  f.start_link(scheduler.endpoint());
  auto reg = scheduler.expect<proto::Register>(5s);
  REQUIRE(reg);
  scheduler.send(proto::Error{StatusCode::kUnavailable, "busy", reg->first.sequence});
  CHECK(scheduler.expect<proto::Register>(10s));
  CHECK_FALSE(f.link->refused());
}

}  // namespace dancemoe::node
