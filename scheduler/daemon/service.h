// The scheduler's state machine, without sockets: it consumes received
// messages (handle) and the passage of time (tick) and produces messages to
// send (take_outbox). control_server.h runs it on a ZeroMQ ROUTER socket;
// unit tests drive it directly with a FakeClock and an in-memory store.
//
// What it does (DESIGN.md §5-8, issue 4):
//   - membership: Register (model id, cluster id, protocol major checked;
//     refusals name both values), heartbeats, down after k misses;
//   - activation reports: validated against the model (message_checks.h),
//     stored in one transaction, then acknowledged; resends are stored once;
//   - placement rounds: periodic (every interval), on demand, cold start,
//     coverage repair (gate bypassed), operator override; every round is a
//     recorded decision with C(P), C(P'), T_mig (planner.h);
//   - two-phase migration and re-synchronisation (migration.h);
//   - status queries from the CLI (service_status.cpp), as JSON;
//   - keys (docs/security.md, service_members.cpp): every message is
//     classified by its sender key (key_ring.h) -- unknown keys get no
//     answer, node messages need a node key bound to the node id, changes
//     need an operator key; the members (admitted node keys with their node
//     ids) are sent to the nodes whenever they change, after a
//     registration, before every PlacementPrepare and in answer to a
//     heartbeat that names another members version; nodes admit / revoke /
//     forget change them live.
//
// Bad input never stops it: every rejected message gets an Error reply (or
// a RegisterReply saying why) and increments a counter shown by
// `dancemoe status` (service_counters.h).
//
// Threading: one thread calls everything (the service loop owns the socket
// and the store; see control_server.h). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/net/zmq_transport.h"
#include "common/proto/messages.h"
#include "common/runtime/clock.h"
#include "scheduler/config/scheduler_config.h"
#include "scheduler/daemon/key_ring.h"
#include "scheduler/daemon/membership.h"
#include "scheduler/daemon/message_checks.h"
#include "scheduler/daemon/migration.h"
#include "scheduler/daemon/model_info.h"
#include "scheduler/daemon/planner.h"
#include "scheduler/daemon/scheduler_counters.h"
#include "scheduler/daemon/service_options.h"
#include "scheduler/daemon/status_query.h"
#include "scheduler/store/retention.h"
#include "scheduler/store/store.h"

namespace dancemoe::scheduler {

struct Outgoing {
  std::string routing_id;
  proto::Envelope envelope;
};

class SchedulerService {
 public:
  // `keys`: who may do what; KeyRing::insecure() lets everyone do everything.
  SchedulerService(ServiceOptions options, ModelInfo model, store::Store* store, const Clock* clock,
                   KeyRing keys = KeyRing::insecure());

  // Loads nodes and the committed placement from the store; versions a
  // crash left half-prepared are aborted (and their nodes told so when they
  // re-register). Call once before anything else.
  Status start();

  void handle(const net::ReceivedMessage& message);
  void tick();
  std::vector<Outgoing> take_outbox();

  // Steady time of the next timed work (for the loop's poll timeout).
  int64_t next_wakeup_ms() const;

  const ModelInfo& model() const { return model_; }
  const Membership& membership() const { return membership_; }
  uint64_t committed_version() const { return committed_ ? committed_->version : 0; }
  const std::optional<Migration>& migration() const { return migration_; }
  const SchedulerCounters& counters() const { return counters_; }
  const KeyRing& keys() const { return keys_; }
  // The members nodes are told (version 0 and empty when insecure).
  const proto::Members& members() const { return members_; }

  // The read-only status queries -- "status", "nodes", "placement"
  // {"layer"?}, "migrations" {"limit"?} -- for readers other than the
  // control socket (the HTTP endpoint, through ServiceInbox, on this
  // thread). Proposals and changes (propose, round, apply) are refused
  // here.
  Result<nlohmann::ordered_json> read_only_query(const std::string& what,
                                                 const nlohmann::json& args);
  // A change ("round", "apply", "admit", "revoke", "forget") for a caller
  // that authenticated an operator key itself (the HTTP endpoint,
  // scheduler/http/http_access.h); the control socket checks its sender's
  // key in on_status. Anything else is invalid_argument.
  Result<nlohmann::ordered_json> operator_query(const std::string& what,
                                                const nlohmann::json& args);

 private:
  // Messages.
  void reject(const std::string& routing_id, uint64_t sequence, const Status& status,
              Rejection why);
  void send(const std::string& routing_id, proto::Body body);
  void send_to_node(const std::string& node_id, proto::Body body);
  void on_register(const std::string& routing_id, const proto::Envelope& env,
                   const proto::Register& reg, const Principal& who, const std::string& key);
  // Empty when `key` may register reg.node_id (binding it on first use),
  // else why not.
  std::string check_binding(const proto::Register& reg, const Principal& who,
                            const std::string& key);
  void on_report(Member& member, const proto::Envelope& env, const proto::ActivationReport& r);
  void on_ready(Member& member, const proto::Envelope& env, const proto::Ready& ready);
  void on_abort(Member& member, const proto::Abort& abort);
  void on_status(const std::string& routing_id, const proto::Envelope& env,
                 const proto::StatusRequest& request, const Principal& who);

  // Keys and members (service_members.cpp).
  // Recomputes the members; sends them to every up node when they changed.
  void refresh_members();
  void send_members(const std::string& routing_id);
  Result<nlohmann::ordered_json> admit_key(const nlohmann::json& args);
  Result<nlohmann::ordered_json> revoke_key(const nlohmann::json& args);
  Result<nlohmann::ordered_json> forget_node(const nlohmann::json& args);
  void warn_if_insecure(int64_t now_ms);

  // Rounds and migrations.
  struct RoundRequest {
    explicit RoundRequest(std::string trigger_name, std::string policy_name = "")
        : trigger(std::move(trigger_name)), policy(std::move(policy_name)) {}
    std::string trigger;
    std::string policy;  // empty: the configured one
    bool force = false;  // operator override: adopt whatever the gate says
    const nlohmann::json* operator_placement = nullptr;  // apply --file
  };
  Result<PlanProblem> gather_problem();
  store::DecisionRecord run_round(const RoundRequest& request);
  Status start_migration(store::DecisionRecord* decision, const PlanProblem& plan,
                         const Candidate& candidate, const std::string& policy);
  void commit_migration();
  void abort_migration(const std::string& reason);
  void start_resync(Member& member);
  bool needs_resync(const Member& member) const;
  void on_nodes_down(const std::vector<std::string>& nodes);
  void maybe_repair_coverage();
  void maybe_cold_start();
  void run_retention();

  // Status queries (service_status.cpp; the read-only ones in status_query.h).
  Result<nlohmann::ordered_json> status_query(const std::string& what, const nlohmann::json& args);
  Result<nlohmann::ordered_json> propose_json(const std::string& policy, const StatusQuery& query);
  Result<Candidate> operator_candidate(const PlanProblem& plan, const nlohmann::json& placement);

  ServiceOptions options_;
  ModelInfo model_;
  store::Store* store_;
  const Clock* clock_;
  KeyRing keys_;
  std::map<std::string, store::KeyBinding> bindings_;  // node id -> its key
  proto::Members members_;
  int64_t next_insecure_warning_ms_ = 0;
  Membership membership_;
  std::optional<store::PlacementRecord> committed_;
  std::optional<Migration> migration_;
  std::map<std::string, Resync> resyncs_;
  std::vector<uint64_t> abandoned_versions_;  // aborted at start; told to re-registering nodes
  std::vector<Outgoing> outbox_;
  SchedulerCounters counters_;
  uint64_t next_sequence_ = 1;
  int64_t started_ms_ = 0;
  int64_t next_round_ms_ = 0;
  int64_t next_retention_ms_ = 0;
  int64_t last_join_ms_ = 0;
  int64_t retry_after_ms_ = 0;  // after a failed repair / cold start migration
  uint64_t cold_start_failed_generation_ = UINT64_MAX;
};

}  // namespace dancemoe::scheduler
