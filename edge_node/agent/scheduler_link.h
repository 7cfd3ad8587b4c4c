// SchedulerLink: the node's side of the control protocol (DESIGN.md §7),
// on its own thread, which owns the DEALER socket to the scheduler.
//
//   register    Register (node id, model id, devices with expert budget and
//               measured load bandwidth, endpoints, resident experts,
//               committed version) until a RegisterReply; a refusal (e.g. a
//               different model id), or an Error in reply to the Register
//               (a different cluster id or protocol version), is final:
//               refused() turns true with the scheduler's reason and the
//               agent exits 2. No answer at all is logged as a warning once
//               and then every minute while it lasts, with the endpoint.
//   attached    Heartbeat every heartbeat interval (the scheduler's, from the
//               reply), activation reports every report interval (the
//               --report-interval flag when given, else the scheduler's,
//               else 10 s); reports stay in a bounded buffer until Acked and
//               are resent with their original sequence numbers.
//   control     PlacementPrepare -> MigrationExecutor::prepare, then Ready
//               or Abort when loading ends; Commit / Abort -> the executor,
//               answered with an Ack (or an Error saying why not).
//   members     Members (docs/security.md) replace the node's MemberKeys;
//               every heartbeat names the members version held, so a lost
//               Members message is resent within one heartbeat.
//   lost        nothing heard for `missed_heartbeats` intervals (or an Error
//               while attached): the socket is closed and re-created, and
//               the node registers again with back-off (Lazy Pirate); it
//               keeps serving on its committed placement meanwhile, and
//               reports keep accumulating in the buffer.
//
// Thread-safe: start/stop/status from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/proto/messages.h"
#include "common/runtime/clock.h"
#include "edge_node/activation/activation_log.h"
#include "edge_node/activation/report_buffer.h"
#include "edge_node/migration/migration_executor.h"
#include "edge_node/remote/member_keys.h"

namespace dancemoe::node {

struct SchedulerLinkOptions {
  std::string endpoint;  // tcp://HOST:PORT
  std::string node_id;
  std::string cluster_id;
  std::chrono::milliseconds report_interval{10000};
  bool report_interval_from_flag = false;              // the flag wins over the scheduler's value
  std::chrono::milliseconds heartbeat_interval{1000};  // until the scheduler says otherwise
  int missed_heartbeats = 3;
  std::chrono::milliseconds register_timeout{2000};
  std::chrono::milliseconds max_backoff{5000};
  size_t report_buffer = 360;
  // CURVE towards the scheduler (its pinned key) and the members it sends;
  // null or insecure: plain socket, Members ignored.
  std::shared_ptr<MemberKeys> members;
  std::string scheduler_key;  // Z85 public key of the scheduler
  // Time for backoffs, heartbeats, report windows and liveness; tests give a
  // FakeClock. Must outlive the link.
  const Clock* clock = &system_clock();
};

struct LinkStatus {
  bool attached = false;
  bool refused = false;
  std::string reason;  // refusal or last problem
  uint64_t registrations = 0;
  uint64_t reports_sent = 0;
  uint64_t reports_acked = 0;
  uint64_t reports_pending = 0;
  uint64_t reports_dropped = 0;
  uint64_t reports_refused = 0;  // answered by an Error: never resent
};

class SchedulerLink {
 public:
  using RegisterBuilder = std::function<proto::Register()>;
  using InFlight = std::function<uint32_t()>;

  SchedulerLink(zmq::context_t& context, SchedulerLinkOptions options, RegisterBuilder build,
                MigrationExecutor& migration, ActivationLog& log, InFlight in_flight);
  ~SchedulerLink();
  SchedulerLink(const SchedulerLink&) = delete;
  SchedulerLink& operator=(const SchedulerLink&) = delete;

  void start();
  void stop();
  LinkStatus status() const;
  bool refused() const { return refused_.load(); }

 private:
  // Steady milliseconds from options_.clock.
  using Millis = std::chrono::milliseconds;
  enum class State { kDisconnected, kRegistering, kAttached };

  void run();
  bool open_socket();
  void send(proto::Body body, uint64_t sequence = 0);
  void handle(const proto::Envelope& envelope);
  void lose(const std::string& why);
  void refuse(const std::string& reason);
  void collect_reports(Millis now);
  Millis steady_now() const { return Millis(options_.clock->steady_ms()); }

  zmq::context_t& context_;
  SchedulerLinkOptions options_;
  RegisterBuilder build_register_;
  MigrationExecutor& migration_;
  ActivationLog& log_;
  InFlight in_flight_;

  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> refused_{false};

  // Link thread only.
  std::optional<zmq::socket_t> socket_;
  State state_ = State::kDisconnected;
  uint64_t sequence_ = 0;
  Millis next_register_{0};
  Millis register_sent_{0};
  uint64_t register_sequence_ = 0;
  Millis unanswered_since_{0};     // first Register of the current unanswered run (0: none)
  Millis last_unanswered_log_{0};  // last "not attached" warning (0: none yet)
  Millis last_heard_{0};
  Millis last_heartbeat_{0};
  Millis last_report_{0};
  Millis backoff_{0};
  std::chrono::milliseconds heartbeat_interval_;
  std::chrono::milliseconds report_interval_;
  ReportBuffer reports_;

  // Migration outcomes, posted by the loader thread, sent by the link thread.
  std::mutex outbox_mutex_;
  std::deque<proto::Body> outbox_;

  mutable std::mutex status_mutex_;
  LinkStatus status_;
};

}  // namespace dancemoe::node
