// A test protocol peer for the node's control link: the scheduler's side of
// the real protocol (schemas/dancemoe.fbs over a real ROUTER socket), driven
// step by step by a test -- what the node agent can be tested against
// before the scheduler daemon exists. Secure as the real one when given a
// key set: a CURVE server with the scheduler's key behind a ZAP handler
// that admits the node keys of admit(), which send_members() tells the
// nodes. Header-only (the suite compiles only *_test.cpp). Not thread-safe
// (one socket, the test's thread).
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/net/zap_handler.h"
#include "common/net/zmq_transport.h"
#include "tests/support/cluster_keys.h"

namespace dancemoe::testing {

class ScriptedScheduler {
 public:
  struct Received {
    std::string from;  // the sender's node id (envelope sender)
    proto::Envelope envelope;
  };

  ScriptedScheduler(zmq::context_t& context, const std::string& endpoint,
                    const ClusterKeys* keys = nullptr) {
    net::SocketOptions options;
    if (keys != nullptr) {
      auto zap = net::ZapHandler::start(context, allowed_);
      REQUIRE(zap.is_ok());
      zap_ = std::move(*zap);
      options.curve = net::CurveOptions{keys->scheduler_pair(), {}};
    }
    auto s = net::make_socket(context, zmq::socket_type::router, options);
    REQUIRE(s.is_ok());
    socket_ = std::move(s).value();
    // A restarted scheduler reuses its port, which ZeroMQ frees asynchronously.
    bool bound = false;
    for (int i = 0; i < 200 && !bound; ++i) {
      bound = net::bind(socket_, endpoint).is_ok();
      if (!bound) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    REQUIRE(bound);
    endpoint_ = net::last_endpoint(socket_);
  }
  const std::string& endpoint() const { return endpoint_; }

  // The next message within `timeout`. Heartbeats and activation reports
  // are recorded (reports per sender, by sequence) and acknowledged when the
  // auto_ack_* flags say so.
  std::optional<Received> next(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      auto m = net::receive_message(socket_, left, /*router=*/true);
      if (!m) continue;
      if (!m->envelope.is_ok()) {
        ++bad_messages;
        continue;
      }
      // Nodes are known by the id they send; their connection's routing id
      // (node id plus a per-connection suffix with keys) is where replies go.
      routes_[m->envelope->sender] = m->routing_id;
      Received r{m->envelope->sender, std::move(*m->envelope)};
      if (std::holds_alternative<proto::Heartbeat>(r.envelope.body)) {
        ++heartbeats[r.from];
        if (auto_ack_heartbeats) send(r.from, proto::Ack{r.envelope.sequence});
      }
      if (const auto* report = std::get_if<proto::ActivationReport>(&r.envelope.body)) {
        reports[r.from][r.envelope.sequence] = *report;  // a resend lands on the same key
        ++report_messages[r.from];
        if (auto_ack_reports) send(r.from, proto::Ack{r.envelope.sequence});
      }
      return r;
    }
    return std::nullopt;
  }

  // The next message of type T (from `from`, if given); others are handled by next().
  template <typename T>
  std::optional<std::pair<Received, T>> expect(std::chrono::milliseconds timeout,
                                               const std::string& from = "") {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      std::optional<Received> r = next(left);
      if (!r) continue;
      if (!from.empty() && r->from != from) continue;
      if (const auto* t = std::get_if<T>(&r->envelope.body)) {
        T value = *t;
        return std::make_pair(std::move(*r), std::move(value));
      }
    }
    return std::nullopt;
  }

  // Keeps answering heartbeats and collecting reports for `duration`.
  void pump(std::chrono::milliseconds duration) {
    const auto until = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < until) {
      next(std::chrono::duration_cast<std::chrono::milliseconds>(until -
                                                                 std::chrono::steady_clock::now()));
    }
  }

  // Pumps until `done()` holds (checked between messages and every 50 ms) or
  // `timeout` passes; whether it held. Tests wait on a condition this way
  // rather than for a fixed time that a loaded CI machine may overrun.
  template <typename Predicate>
  bool pump_until(Predicate done, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() >= until) return false;
      next(std::chrono::milliseconds(50));
    }
    return true;
  }

  // Node `id`'s key may connect, and is a member.
  void admit(const std::string& id, const std::string& public_key) {
    members_.members.push_back({id, id, public_key});
    members_.version = members_.members.size();
    std::set<std::string, std::less<>> keys;
    for (const proto::MemberKey& k : members_.members) keys.insert(k.public_key);
    allowed_->replace(std::move(keys));
  }
  void send_members(const std::string& to) { send(to, members_); }

  uint64_t send(const std::string& to, proto::Body body) {
    proto::Envelope e;
    e.cluster_id = cluster_id;
    e.sender = "scheduler";
    e.sequence = ++sequence_;
    e.body = std::move(body);
    const auto route = routes_.find(to);
    REQUIRE(net::send_message(socket_, e, {}, route != routes_.end() ? route->second : to).is_ok());
    return e.sequence;
  }

  std::string cluster_id;
  bool auto_ack_heartbeats = true;
  bool auto_ack_reports = true;
  std::map<std::string, int> heartbeats;
  std::map<std::string, std::map<uint64_t, proto::ActivationReport>> reports;
  std::map<std::string, int> report_messages;
  int bad_messages = 0;

 private:
  std::shared_ptr<net::KeyAllowlist> allowed_ = std::make_shared<net::KeyAllowlist>();
  std::unique_ptr<net::ZapHandler> zap_;  // before socket_: it stops after the socket closes
  proto::Members members_;
  zmq::socket_t socket_;
  std::string endpoint_;
  uint64_t sequence_ = 0;
  std::map<std::string, std::string> routes_;  // node id -> routing id
};

}  // namespace dancemoe::testing
