// SchedulerService: message handling (service.h). Rounds, migrations and
// timed work are in service_rounds.cpp; status queries in service_status.cpp.
#include "scheduler/daemon/service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace dancemoe::scheduler {
namespace {

std::vector<ExpertRef> sorted_refs(std::vector<ExpertRef> refs) {
  std::sort(refs.begin(), refs.end());
  refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
  return refs;
}

}  // namespace

SchedulerService::SchedulerService(ServiceOptions options, ModelInfo model, store::Store* store,
                                   const Clock* clock, KeyRing keys)
    : options_(std::move(options)),
      model_(std::move(model)),
      store_(store),
      clock_(clock),
      keys_(std::move(keys)) {}

Status SchedulerService::start() {
  const int64_t now = clock_->steady_ms();
  started_ms_ = now;
  DMOE_ASSIGN_OR_RETURN(
      abandoned_versions_,
      store_->abandon_unfinished("the scheduler restarted during prepare", clock_->wall_ms()));
  for (uint64_t v : abandoned_versions_) {
    spdlog::warn("placement version {} was being prepared when the scheduler stopped: aborted", v);
  }
  DMOE_ASSIGN_OR_RETURN(std::vector<store::NodeRecord> nodes, store_->load_nodes());
  membership_.load(nodes, now);
  DMOE_ASSIGN_OR_RETURN(committed_, store_->committed_placement());
  DMOE_ASSIGN_OR_RETURN(std::vector<store::KeyBinding> bindings, store_->load_key_bindings());
  for (store::KeyBinding& b : bindings) bindings_[b.node_id] = std::move(b);
  refresh_members();
  next_round_ms_ = now + options_.interval_ms;
  next_retention_ms_ = now;
  last_join_ms_ = now;
  spdlog::info("scheduler state: {} known node(s), committed placement version {}", nodes.size(),
               committed_version());
  return Status::ok();
}

std::vector<Outgoing> SchedulerService::take_outbox() {
  std::vector<Outgoing> out;
  out.swap(outbox_);
  return out;
}

void SchedulerService::send(const std::string& routing_id, proto::Body body) {
  proto::Envelope env;
  env.cluster_id = options_.cluster_id;
  env.sender = "scheduler";
  env.sequence = next_sequence_++;
  env.body = std::move(body);
  outbox_.push_back({routing_id, std::move(env)});
}

void SchedulerService::send_to_node(const std::string& node_id, proto::Body body) {
  const Member* m = membership_.find(node_id);
  if (m == nullptr || m->state != NodeState::kUp || m->routing_id.empty()) return;
  send(m->routing_id, std::move(body));
}

void SchedulerService::reject(const std::string& routing_id, uint64_t sequence,
                              const Status& status, Rejection why) {
  counters_.reject(why);
  spdlog::debug("rejected a message ({}): {}", rejection_name(why), status.to_string());
  if (routing_id.empty()) return;
  send(routing_id, proto::Error{status.code(), status.message(), sequence});
}

void SchedulerService::handle(const net::ReceivedMessage& message) {
  ++counters_.messages;
  const Principal who = keys_.who(message.sender_key);
  if (!who.known()) {
    // A key not admitted, or revoked while its connection stayed open: no
    // answer at all, and nothing changes.
    counters_.reject(Rejection::kUnknownKey);
    return;
  }
  if (!message.envelope.is_ok()) {
    const Status& status = message.envelope.status();
    // A receive interrupted by a signal has no sender and is not a message.
    if (message.routing_id.empty()) return;
    reject(message.routing_id, message.sequence, status,
           status.code() == StatusCode::kVersionMismatch ? Rejection::kVersionMismatch
                                                         : Rejection::kUndecodable);
    return;
  }
  const proto::Envelope& env = *message.envelope;
  // The CLI may leave the cluster id empty (it does not need to know it);
  // everything else must carry ours.
  const bool anonymous_status =
      env.cluster_id.empty() && std::holds_alternative<proto::StatusRequest>(env.body);
  if (env.cluster_id != options_.cluster_id && !anonymous_status) {
    reject(message.routing_id, env.sequence,
           failed_precondition("cluster id '" + env.cluster_id + "' (" + env.sender + ") != '" +
                               options_.cluster_id + "' (scheduler)"),
           Rejection::kWrongCluster);
    return;
  }
  if (const auto* reg = std::get_if<proto::Register>(&env.body)) {
    on_register(message.routing_id, env, *reg, who, message.sender_key);
    return;
  }
  if (const auto* request = std::get_if<proto::StatusRequest>(&env.body)) {
    on_status(message.routing_id, env, *request, who);
    return;
  }
  const bool from_node = std::holds_alternative<proto::Heartbeat>(env.body) ||
                         std::holds_alternative<proto::ActivationReport>(env.body) ||
                         std::holds_alternative<proto::Ready>(env.body) ||
                         std::holds_alternative<proto::Abort>(env.body) ||
                         std::holds_alternative<proto::Ack>(env.body);
  if (!from_node) {
    reject(message.routing_id, env.sequence,
           invalid_argument("the scheduler does not accept " +
                            std::string(proto::body_name(env.body)) + " messages"),
           Rejection::kUnexpectedType);
    return;
  }
  if (!who.node) {
    reject(message.routing_id, env.sequence,
           failed_precondition(std::string(proto::body_name(env.body)) + " from key '" + who.name +
                               "', an operator key: only node keys speak the node protocol"),
           Rejection::kNotPermitted);
    return;
  }
  Member* member = membership_.by_routing(message.routing_id);
  if (member == nullptr) {
    reject(message.routing_id, env.sequence,
           // not_found is what tells a node to register again (docs/node/README.md).
           not_found(std::string(proto::body_name(env.body)) + " from '" + env.sender +
                     "', which is not registered (or was marked down): send Register"),
           Rejection::kUnregistered);
    return;
  }
  if (env.sender != member->id()) {
    reject(message.routing_id, env.sequence,
           failed_precondition("sender '" + env.sender + "' does not match node '" + member->id() +
                               "' registered on this connection"),
           Rejection::kWrongSender);
    return;
  }
  if (keys_.secure()) {
    const auto bound = bindings_.find(member->id());
    if (bound == bindings_.end() || bound->second.public_key != message.sender_key) {
      reject(message.routing_id, env.sequence,
             failed_precondition("key '" + who.name + "' is not the key node '" + member->id() +
                                 "' registered with"),
             Rejection::kWrongSender);
      return;
    }
  }
  membership_.touch(*member, clock_->steady_ms());
  if (const auto* hb = std::get_if<proto::Heartbeat>(&env.body)) {
    member->heartbeat_version = hb->placement_version;
    member->requests_in_flight = hb->requests_in_flight;
    ++counters_.heartbeats;
    send(message.routing_id, proto::Ack{env.sequence});
    // A node that missed a Members message catches up within one heartbeat.
    if (keys_.secure() && hb->members_version != members_.version) {
      send_members(message.routing_id);
    }
  } else if (const auto* report = std::get_if<proto::ActivationReport>(&env.body)) {
    on_report(*member, env, *report);
  } else if (const auto* ready = std::get_if<proto::Ready>(&env.body)) {
    on_ready(*member, env, *ready);
  } else if (const auto* abort = std::get_if<proto::Abort>(&env.body)) {
    on_abort(*member, *abort);
  } else if (std::holds_alternative<proto::Ack>(env.body)) {
    // A node acknowledges a Commit or an Abort: the node's heartbeats carry
    // the version it serves, so there is nothing to wait for; it is counted
    // so an operator can see the nodes confirming.
    ++counters_.node_acks;
  }
}

void SchedulerService::on_register(const std::string& routing_id, const proto::Envelope& env,
                                   const proto::Register& reg, const Principal& who,
                                   const std::string& key) {
  auto refuse = [&](const std::string& reason, Rejection why) {
    ++counters_.register_refused;
    counters_.reject(why);
    spdlog::warn("refused registration of '{}': {}", reg.node_id, reason);
    proto::RegisterReply reply;
    reply.accepted = false;
    reply.reason = reason;
    send(routing_id, reply);
  };
  if (reg.model_id != model_.model_id) {
    refuse("model id " + reg.model_id + " (node " + reg.node_id + ") != " + model_.model_id +
               " (scheduler)",
           Rejection::kModelMismatch);
    return;
  }
  const Status valid = check_register(reg, env.sender, model_, options_.limits);
  if (!valid.is_ok()) {
    refuse(valid.message(), Rejection::kInvalidRegister);
    return;
  }
  if (const std::string why = check_binding(reg, who, key); !why.empty()) {
    refuse(why, who.node ? Rejection::kKeyBinding : Rejection::kNotPermitted);
    return;
  }
  // Precision: the model file's, or one the operator allowed (expert_types).
  if (!reg.expert_type.empty() && reg.expert_type != model_.expert_type) {
    const auto& allowed = options_.allowed_expert_types;
    const bool ok = std::find(allowed.begin(), allowed.end(), "*") != allowed.end() ||
                    std::find(allowed.begin(), allowed.end(), reg.expert_type) != allowed.end();
    if (!ok) {
      refuse("node " + reg.node_id + " holds its experts in " + reg.expert_type +
                 ", the scheduler's model in " + model_.expert_type + "; list " + reg.expert_type +
                 " in the scheduler's expert_types to allow it",
             Rejection::kModelMismatch);
      return;
    }
  }
  model_.admit_expert_sizes(reg.expert_layer_bytes);
  const int64_t now = clock_->steady_ms();
  const int64_t wall = clock_->wall_ms();
  store::NodeRecord record;
  if (const Member* known = membership_.find(reg.node_id)) record = known->record;
  if (record.first_registered_ms == 0) record.first_registered_ms = wall;
  record.node_id = reg.node_id;
  record.last_registered_ms = wall;
  record.expert_endpoint = reg.expert_endpoint;
  record.http_endpoint = reg.http_endpoint;
  record.host_memory_bytes = reg.host_memory_bytes;
  record.placement_version = reg.placement_version;
  record.migration_headroom_bytes = reg.migration_headroom_bytes;
  record.devices.clear();
  for (const proto::DeviceInfo& d : reg.devices) {
    store::DeviceRecord device{d.name, d.expert_budget_bytes, d.load_bytes_per_s, d.kind};
    // A device the node had before keeps its measured speed.
    if (const Member* known = membership_.find(reg.node_id)) {
      for (const store::DeviceRecord& old : known->record.devices) {
        if (old.name == d.name) {
          device.compute_pairs = old.compute_pairs;
          device.compute_busy_us = old.compute_busy_us;
        }
      }
    }
    record.devices.push_back(std::move(device));
  }
  const Status saved = store_->save_node(record);
  if (!saved.is_ok()) {
    ++counters_.store_errors;
    spdlog::error("cannot store node '{}': {}", reg.node_id, saved.to_string());
    send(routing_id, proto::Error{StatusCode::kUnavailable,
                                  "the scheduler cannot store the registration: " + saved.message(),
                                  env.sequence});
    return;
  }
  Member& member = membership_.attach(record, sorted_refs(reg.resident), routing_id, now, wall);
  member.expert_type = reg.expert_type.empty() ? model_.expert_type : reg.expert_type;
  member.expert_files_partial = reg.expert_files_partial;
  member.expert_files.clear();
  if (reg.expert_files_partial) {
    member.expert_files.assign(static_cast<size_t>(model_.index.n_total), false);
    for (const ExpertRef& r : reg.expert_files) {
      member.expert_files[static_cast<size_t>(model_.flat(r.layer, r.expert))] = true;
    }
  }
  member.experts_only = reg.role == "experts";
  last_join_ms_ = now;
  ++counters_.registrations;
  spdlog::info("node '{}' registered ({} device(s), serving version {}, endpoint {}{}{})",
               reg.node_id, reg.devices.size(), reg.placement_version, reg.expert_endpoint,
               reg.expert_files_partial
                   ? ", expert files: " + std::to_string(reg.expert_files.size()) + " of " +
                         std::to_string(model_.index.n_total)
                   : std::string(),
               member.experts_only ? ", experts only" : "");

  proto::RegisterReply reply;
  reply.accepted = true;
  reply.heartbeat_interval_ms = static_cast<uint32_t>(options_.heartbeat_interval_ms);
  reply.report_interval_ms = static_cast<uint32_t>(options_.report_interval_ms);
  reply.placement_version = committed_version();
  send(routing_id, reply);
  if (keys_.secure()) {
    refresh_members();  // a new binding gives a member its node id
    send_members(routing_id);
  }

  for (uint64_t v : abandoned_versions_) {
    send(routing_id, proto::Abort{v, "the scheduler restarted during prepare"});
  }
  resyncs_.erase(reg.node_id);
  if (migration_ && migration_->is_participant(reg.node_id)) {
    abort_migration("node '" + reg.node_id + "' re-registered during prepare");
  }
  if (needs_resync(member)) start_resync(member);
}

void SchedulerService::on_report(Member& member, const proto::Envelope& env,
                                 const proto::ActivationReport& report) {
  Result<store::ReportRecord> record =
      check_report(report, member.id(), env.sequence, clock_->wall_ms(), model_, options_.limits);
  if (!record.is_ok()) {
    reject(member.routing_id, env.sequence, record.status(), Rejection::kInvalidReport);
    return;
  }
  Result<store::InsertOutcome> outcome = store_->insert_report(*record);
  if (!outcome.is_ok()) {
    // Not acknowledged: the node keeps the report and resends it.
    ++counters_.store_errors;
    spdlog::error("cannot store a report of '{}': {}", member.id(), outcome.status().to_string());
    send(member.routing_id,
         proto::Error{StatusCode::kUnavailable, "report not stored: " + outcome.status().message(),
                      env.sequence});
    return;
  }
  switch (*outcome) {
    case store::InsertOutcome::kStored:
      ++counters_.reports_stored;
      counters_.count_entries_stored += record->counts.size();
      for (const proto::DeviceCompute& d : record->devices) {
        for (store::DeviceRecord& device : member.record.devices) {
          if (device.name == d.device) device.add_compute(d.pairs, d.busy_us);
        }
      }
      break;
    case store::InsertOutcome::kDuplicate:
      ++counters_.reports_duplicate;
      break;
    case store::InsertOutcome::kStale:
      ++counters_.reports_stale;
      break;
  }
  send(member.routing_id, proto::Ack{env.sequence});
}

void SchedulerService::on_ready(Member& member, const proto::Envelope& env,
                                const proto::Ready& ready) {
  if (migration_ && ready.version == migration_->version() &&
      migration_->is_participant(member.id())) {
    spdlog::info("node '{}' is ready for version {}", member.id(), ready.version);
    if (migration_->mark_ready(member.id())) commit_migration();
    return;
  }
  const auto resync = resyncs_.find(member.id());
  if (resync != resyncs_.end() && resync->second.version == ready.version) {
    resyncs_.erase(resync);
    ++counters_.resyncs_completed;
    send(member.routing_id, proto::Commit{ready.version});
    return;
  }
  reject(member.routing_id, env.sequence,
         failed_precondition("Ready for version " + std::to_string(ready.version) +
                             ", but no migration to that version is in progress for '" +
                             member.id() + "'"),
         Rejection::kStaleReady);
}

void SchedulerService::on_abort(Member& member, const proto::Abort& abort) {
  if (migration_ && abort.version == migration_->version() &&
      migration_->is_participant(member.id())) {
    abort_migration("node '" + member.id() + "' aborted: " + abort.reason);
    return;
  }
  const auto resync = resyncs_.find(member.id());
  if (resync != resyncs_.end() && resync->second.version == abort.version) {
    spdlog::warn("node '{}' could not re-synchronise to version {}: {}", member.id(), abort.version,
                 abort.reason);
    resyncs_.erase(resync);
    ++counters_.resyncs_failed;
    return;
  }
  ++counters_.stale_aborts;
}

bool SchedulerService::needs_resync(const Member& member) const {
  if (!committed_) return false;
  if (member.record.placement_version != committed_->version) return true;
  std::vector<ExpertRef> assigned;
  for (const NodePlacement& node : committed_->nodes) {
    if (node.node_id != member.id()) continue;
    for (const DevicePlacement& d : node.devices) {
      assigned.insert(assigned.end(), d.experts.begin(), d.experts.end());
    }
  }
  return sorted_refs(std::move(assigned)) != member.resident;
}

void SchedulerService::start_resync(Member& member) {
  resyncs_[member.id()] = {committed_->version, clock_->steady_ms() + options_.prepare_timeout_ms};
  ++counters_.resyncs_started;
  spdlog::info("re-synchronising node '{}' to committed version {}", member.id(),
               committed_->version);
  if (keys_.secure()) send_members(member.routing_id);
  send(member.routing_id, proto::PlacementPrepare{committed_->version, committed_->nodes});
}

}  // namespace dancemoe::scheduler
