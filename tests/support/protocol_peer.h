// A test node that speaks the real protocol to a real scheduler over real
// sockets (ZeroMQ DEALER, FlatBuffers envelopes), without being the node
// agent: integration tests of the scheduler must not depend on edge_node.
//
// It registers, heartbeats at the interval the scheduler gives, re-registers
// when the scheduler says it does not know it (after a scheduler restart),
// sends activation reports and resends each until it is acknowledged (same
// envelope sequence: the scheduler must store it once), and answers
// PlacementPrepare as told: Ready, Abort, silence (a prepare timeout), or
// "die" (stop everything, as a crashed node). Commit makes the prepared
// version its current one.
//
// Threading: start() runs one thread that owns the socket; every public
// method is safe to call from the test's thread (commands go through a
// queue; state is read under a mutex).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/base/status.h"
#include "common/net/zmq_transport.h"
#include "common/proto/messages.h"

namespace dancemoe::testing {

enum class PrepareAnswer { kReady, kAbort, kSilent, kDie };

struct PeerOptions {
  std::string scheduler;  // tcp://127.0.0.1:PORT
  std::string node_id;
  std::string model_id;
  std::string cluster_id = "default";
  std::vector<proto::DeviceInfo> devices;
  std::string expert_endpoint;
  bool auto_register = true;  // register at start and whenever told it is unknown
  bool heartbeats = true;
  std::chrono::milliseconds resend_after{300};
  // CURVE towards the scheduler (this peer's key, the scheduler's pinned
  // key); nullopt: a plain socket (an insecure scheduler, or a stranger).
  std::optional<net::CurveOptions> curve;
};

class ProtocolPeer {
 public:
  explicit ProtocolPeer(PeerOptions options);
  ~ProtocolPeer();
  ProtocolPeer(const ProtocolPeer&) = delete;
  ProtocolPeer& operator=(const ProtocolPeer&) = delete;

  void start();
  // Stops the thread and closes the socket (a node that vanished).
  void stop();

  void set_prepare_answer(PrepareAnswer answer);

  // Waits until the last RegisterReply accepted the node (true) or refused
  // it (false; reason()), or nullopt on timeout.
  std::optional<bool> wait_registered(std::chrono::milliseconds timeout);
  std::string refusal_reason() const;
  uint64_t registrations() const;

  // Sends a report with a fresh sequence and resends it until acknowledged;
  // returns the sequence, or an error (Error reply, or timeout).
  Result<uint64_t> report(const proto::ActivationReport& report, std::chrono::milliseconds timeout);
  // Sends a report with an explicit sequence once and waits for the answer.
  Result<proto::Envelope> send_report(const proto::ActivationReport& report, uint64_t sequence,
                                      std::chrono::milliseconds timeout);
  // Sends any envelope body / raw bytes and waits for the first answer that
  // is not a placement message (Ack, Error, StatusReply, RegisterReply).
  Result<proto::Envelope> request(proto::Body body, std::chrono::milliseconds timeout);
  Result<proto::Envelope> request_raw(std::vector<uint8_t> frame,
                                      std::chrono::milliseconds timeout);
  uint64_t next_sequence();

  // Placement state.
  uint64_t committed_version() const;
  std::vector<uint64_t> committed_versions() const;  // every commit, in order
  std::vector<uint64_t> prepared_versions() const;
  std::vector<uint64_t> aborted_versions() const;
  std::optional<proto::PlacementPrepare> last_prepare() const;
  std::optional<proto::Members> last_members() const;
  bool wait_committed(uint64_t version, std::chrono::milliseconds timeout);
  bool wait_aborted(uint64_t version, std::chrono::milliseconds timeout);
  bool wait_prepared(uint64_t version, std::chrono::milliseconds timeout);
  // Waits for any commit of a version above `above`; returns it.
  std::optional<uint64_t> wait_commit_above(uint64_t above, std::chrono::milliseconds timeout);

  const std::string& node_id() const { return options_.node_id; }

 private:
  struct PendingReport {
    proto::Envelope envelope;
    std::chrono::steady_clock::time_point last_sent;
  };
  void run();
  void send_envelope(const proto::Envelope& env);
  void send_register();
  void on_message(const proto::Envelope& env);
  proto::Envelope envelope(proto::Body body, uint64_t sequence);
  // Runs `command` on the peer thread.
  void post(std::function<void()> command);
  template <typename Predicate>
  bool wait_until(std::chrono::milliseconds timeout, Predicate predicate);

  PeerOptions options_;
  std::thread thread_;
  bool running_ = false;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> commands_;
  bool stop_requested_ = false;
  uint64_t sequence_ = 0;
  std::optional<bool> registered_;
  std::string refusal_;
  uint64_t registrations_ = 0;
  uint64_t heartbeat_interval_ms_ = 1000;
  PrepareAnswer answer_ = PrepareAnswer::kReady;
  uint64_t committed_ = 0;
  std::vector<uint64_t> prepared_;
  std::vector<uint64_t> aborted_;
  std::vector<uint64_t> committed_versions_;
  std::optional<proto::PlacementPrepare> last_prepare_;
  std::optional<proto::Members> members_;
  std::map<uint64_t, PendingReport> unacked_;    // sequence -> report (resent until acked)
  std::map<uint64_t, proto::Envelope> answers_;  // sequence -> Ack / Error
  std::set<uint64_t> awaiting_;                  // sequences a caller waits on
  std::optional<proto::Envelope> any_answer_;    // for request_raw
  std::set<uint64_t> heartbeat_sequences_;       // their Acks answer no caller
  std::vector<ExpertRef> resident_;              // this node's experts in `committed_`
  std::vector<uint16_t> resident_devices_;
  zmq::context_t context_{1};
  std::optional<zmq::socket_t> socket_;  // peer thread only
};

// Picks a TCP port on 127.0.0.1 that is free now (for a scheduler that must
// come back on the same address after a restart).
int free_tcp_port();

}  // namespace dancemoe::testing
