// SchedulerService: timed work, placement rounds and two-phase migrations
// (service.h, planner.h, migration.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <set>

#include "common/placement/placement_json.h"
#include "scheduler/daemon/expert_sources.h"
#include "scheduler/daemon/service.h"

namespace dancemoe::scheduler {
namespace {

// The source named in errors about an operator's placement (`placement apply`).
const std::string kOperatorPlacement = "placement";

}  // namespace

void SchedulerService::tick() {
  const int64_t now = clock_->steady_ms();
  warn_if_insecure(now);
  const std::vector<std::string> gone =
      membership_.expire(now, options_.down_after_ms(), clock_->wall_ms());
  if (!gone.empty()) on_nodes_down(gone);

  if (migration_ && migration_->expired(now)) {
    std::string waiting;
    for (const std::string& node : migration_->waiting()) {
      waiting += (waiting.empty() ? "" : ", ") + node;
    }
    abort_migration(fmt::format("prepare timed out after {:.1f} s waiting for {}",
                                options_.prepare_timeout_ms / 1000.0, waiting));
  }
  for (auto it = resyncs_.begin(); it != resyncs_.end();) {
    if (now >= it->second.deadline_ms) {
      spdlog::warn("node '{}' did not re-synchronise to version {} in time", it->first,
                   it->second.version);
      ++counters_.resyncs_failed;
      it = resyncs_.erase(it);
    } else {
      ++it;
    }
  }

  maybe_repair_coverage();
  if (!committed_) {
    maybe_cold_start();
  } else if (now >= next_round_ms_) {
    next_round_ms_ = now + options_.interval_ms;
    run_round(RoundRequest("periodic"));
  }
  if (now >= next_retention_ms_) {
    next_retention_ms_ = now + options_.retention_check_ms;
    run_retention();
  }
}

int64_t SchedulerService::next_wakeup_ms() const {
  // Deadlines already passed were handled by the tick before this call, or
  // are blocked (a round waits for a migration): only future ones count, and
  // the loop wakes at least once a second.
  const int64_t now = clock_->steady_ms();
  int64_t next = now + 1000;
  auto consider = [&](int64_t t) {
    if (t > now) next = std::min(next, t);
  };
  if (committed_) consider(next_round_ms_);
  consider(next_retention_ms_);
  consider(membership_.next_expiry_ms(options_.down_after_ms()));
  if (migration_) consider(migration_->deadline_ms());
  for (const auto& [node, resync] : resyncs_) consider(resync.deadline_ms);
  if (!committed_) consider(last_join_ms_ + options_.cold_start_settle_ms);
  consider(retry_after_ms_);
  return next;
}

void SchedulerService::on_nodes_down(const std::vector<std::string>& nodes) {
  for (const std::string& node : nodes) {
    ++counters_.nodes_down;
    resyncs_.erase(node);
    spdlog::warn("node '{}' missed {} heartbeats: marked down", node, options_.heartbeat_misses);
    if (migration_ && migration_->is_participant(node)) {
      abort_migration("node '" + node + "' went down during prepare");
    }
  }
}

void SchedulerService::maybe_repair_coverage() {
  if (!committed_ || migration_ || clock_->steady_ms() < retry_after_ms_) return;
  if (covers_all(*committed_, membership_, model_)) return;
  spdlog::warn(
      "placement version {} lost coverage (a node holding a sole copy is down): "
      "repairing now, gate bypassed",
      committed_->version);
  const store::DecisionRecord d = run_round(RoundRequest("coverage_repair"));
  if (d.outcome != "adopted") retry_after_ms_ = clock_->steady_ms() + options_.down_after_ms();
}

void SchedulerService::maybe_cold_start() {
  const int64_t now = clock_->steady_ms();
  if (migration_ || now < retry_after_ms_ || membership_.up().empty()) return;
  if (now - last_join_ms_ < options_.cold_start_settle_ms) return;
  if (membership_.generation() == cold_start_failed_generation_) return;
  const store::DecisionRecord d = run_round(RoundRequest("cold_start"));
  if (d.outcome == "error") cold_start_failed_generation_ = membership_.generation();
}

void SchedulerService::run_retention() {
  // A few bounded batches per pass keep ingest latency flat; the rest waits
  // for the next pass.
  for (int batch = 0; batch < 8; ++batch) {
    Result<store::RetentionStats> stats =
        store::Retention::apply(*store_, options_.retention, clock_->wall_ms());
    if (!stats.is_ok()) {
      ++counters_.store_errors;
      spdlog::error("retention failed: {}", stats.status().to_string());
      return;
    }
    if (stats->reports_rolled_up > 0) {
      spdlog::debug("retention: rolled up {} reports into {} buckets", stats->reports_rolled_up,
                    stats->buckets_written);
    }
    if (!stats->more) return;
  }
}

Result<PlanProblem> SchedulerService::gather_problem() {
  const int64_t wall = clock_->wall_ms();
  const int64_t since = committed_ ? committed_->committed_ms.value_or(0) : 0;
  PlanInputs inputs;
  inputs.nodes = membership_.up();
  DMOE_ASSIGN_OR_RETURN(inputs.counts, store_->counts_since(since, model_.index));
  DMOE_ASSIGN_OR_RETURN(inputs.pairs, store_->pairs_since(since, model_.index));
  DMOE_ASSIGN_OR_RETURN(inputs.window_totals, store_->totals_since(since));
  // History totals only serve as the fallback for a node whose window has no
  // latency measurement (planner.h); reading them scans every retained
  // report, the largest part of a round (bench_scheduler_round), so skip it
  // when no node needs it. Before any placement the window is the history.
  bool need_history = false;
  for (const Member* m : inputs.nodes) {
    const auto it = inputs.window_totals.find(m->id());
    need_history = need_history || it == inputs.window_totals.end() ||
                   !it->second.local_mean_us() || !it->second.remote_mean_us();
  }
  if (since == 0) {
    inputs.history_totals = inputs.window_totals;
  } else if (need_history) {
    DMOE_ASSIGN_OR_RETURN(inputs.history_totals, store_->totals_since(0));
  }
  int64_t window_start = since;
  if (since == 0) {
    // All history: the window starts at the first stored report.
    DMOE_ASSIGN_OR_RETURN(
        std::optional<int64_t> first,
        store_->db().query_int("SELECT min(t) FROM (SELECT min(received_ms) AS t FROM reports "
                               "UNION ALL SELECT min(bucket_start_ms) FROM rollups)"));
    window_start = first.value_or(wall);
  }
  inputs.window_s = static_cast<double>(wall - window_start) / 1000.0;
  inputs.current = committed_ ? &*committed_ : nullptr;
  return build_problem(model_, inputs, options_.planner);
}

store::DecisionRecord SchedulerService::run_round(const RoundRequest& request) {
  store::DecisionRecord d;
  d.time_ms = clock_->wall_ms();
  d.trigger = request.trigger;
  d.policy = request.policy.empty() ? options_.planner.policy : request.policy;
  d.from_version = committed_version();
  auto finish = [&](RoundOutcome outcome, const std::string& message) {
    d.outcome = std::string(round_outcome_name(outcome));
    d.message = message;
    const Status stored = store_->record_decision(&d);
    if (!stored.is_ok()) {
      ++counters_.store_errors;
      spdlog::error("cannot record a placement decision: {}", stored.to_string());
    }
    counters_.round(outcome);
    spdlog::info("placement round ({}): {}{}", d.trigger, d.outcome,
                 message.empty() ? "" : ": " + message);
    return d;
  };
  if (migration_) {
    return finish(
        RoundOutcome::kSkipped,
        "a migration to version " + std::to_string(migration_->version()) + " is in progress");
  }
  Result<PlanProblem> plan = gather_problem();
  if (!plan.is_ok()) return finish(RoundOutcome::kError, plan.status().message());
  // Partial checkpoints: a placement must be loadable from what exists.
  if (Status sources = check_expert_sources(*plan, model_, committed_ ? &*committed_ : nullptr);
      !sources.is_ok()) {
    return finish(RoundOutcome::kError, sources.message());
  }
  if (request.policy.empty()) d.policy = plan->policy;  // uniform on a cold start
  d.window_s = plan->problem.activations.window_s;
  d.n_nodes = static_cast<int64_t>(plan->placed.size() + plan->routing_only.size());
  Result<Candidate> candidate = request.operator_placement != nullptr
                                    ? operator_candidate(*plan, *request.operator_placement)
                                    : solve_candidate(*plan, model_, request.policy);
  if (!candidate.is_ok()) return finish(RoundOutcome::kError, candidate.status().message());
  const placement::GateDecision& gate = candidate->gate;
  d.cost_current_s = gate.cost_current_s;
  d.cost_new_s = gate.cost_new_s;
  d.migration_s = gate.migration_s;
  d.migration_bytes = candidate->migration_bytes;
  d.local_hit_ratio_current = candidate->costs_current.local_hit_ratio;
  d.local_hit_ratio_new = candidate->costs_new.local_hit_ratio;
  if (!request.force && !gate.adopt) {
    return finish(RoundOutcome::kRejected,
                  fmt::format("C(P') + T_mig = {:.3f} + {:.3f} s is not below "
                              "C(P) = {:.3f} s",
                              gate.cost_new_s, gate.migration_s, gate.cost_current_s));
  }
  d.outcome = std::string(round_outcome_name(RoundOutcome::kAdopted));
  d.message = request.force ? "operator override: gate not applied"
              : gate.coverage_repair
                  ? (committed_ ? "coverage repair: gate bypassed" : plan->note + "; gate bypassed")
                  : "C(P') + T_mig < C(P)";
  const Status started = start_migration(&d, *plan, *candidate, d.policy);
  if (!started.is_ok()) {
    ++counters_.store_errors;
    return finish(RoundOutcome::kError, "cannot start the migration: " + started.message());
  }
  counters_.round(RoundOutcome::kAdopted);
  spdlog::info(
      "placement round ({}): adopted version {} ({}); C(P)={:.3f} s C(P')={:.3f} s "
      "T_mig={:.3f} s",
      d.trigger, d.version, d.message, d.cost_current_s, d.cost_new_s, d.migration_s);
  return d;
}

Status SchedulerService::start_migration(store::DecisionRecord* decision, const PlanProblem& plan,
                                         const Candidate& candidate, const std::string& policy) {
  DMOE_ASSIGN_OR_RETURN(const uint64_t max_version, store_->max_placement_version());
  const int64_t wall = clock_->wall_ms();
  store::PlacementRecord placement;
  placement.version = max_version + 1;
  placement.policy = policy;
  placement.method = candidate.placement.method;
  placement.trigger = decision->trigger;
  placement.state = "preparing";
  placement.created_ms = wall;
  placement.nodes = to_wire(candidate.placement, plan, model_);
  decision->version = placement.version;

  std::set<std::string> participants;
  for (const Member* m : plan.placed) participants.insert(m->id());
  for (const Member* m : plan.routing_only) participants.insert(m->id());
  store::MigrationRecord record;
  record.from_version = committed_version();
  record.to_version = placement.version;
  record.trigger = decision->trigger;
  record.started_ms = wall;
  record.bytes = candidate.migration_bytes;
  record.n_nodes = static_cast<int64_t>(participants.size());
  record.outcome = "preparing";
  DMOE_RETURN_IF_ERROR(store_->start_placement(decision, &placement, &record));

  const proto::PlacementPrepare prepare{placement.version, placement.nodes};
  migration_.emplace(std::move(placement), std::move(record), std::move(participants),
                     clock_->steady_ms() + options_.prepare_timeout_ms);
  for (const std::string& node : migration_->participants()) {
    resyncs_.erase(node);  // superseded by the migration
    // The members travel with every placement version (docs/security.md).
    if (const Member* m = membership_.find(node); keys_.secure() && m != nullptr) {
      if (m->state == NodeState::kUp && !m->routing_id.empty()) send_members(m->routing_id);
    }
    send_to_node(node, prepare);
  }
  ++counters_.migrations_started;
  return Status::ok();
}

void SchedulerService::commit_migration() {
  const uint64_t version = migration_->version();
  const int64_t wall = clock_->wall_ms();
  const Status stored = store_->commit_placement(version, migration_->record().id, wall);
  if (!stored.is_ok()) {
    // Not committed durably: do not tell the nodes to switch.
    ++counters_.store_errors;
    spdlog::error("cannot commit version {}: {}", version, stored.to_string());
    abort_migration("the scheduler could not record the commit: " + stored.message());
    return;
  }
  store::PlacementRecord placement = migration_->placement();
  placement.state = "committed";
  placement.committed_ms = wall;
  const std::set<std::string> participants = migration_->participants();
  migration_.reset();
  committed_ = std::move(placement);
  for (const std::string& node : participants) send_to_node(node, proto::Commit{version});
  ++counters_.migrations_committed;
  retry_after_ms_ = 0;
  spdlog::info("placement version {} committed on {} node(s)", version, participants.size());
  // Nodes that joined while it was prepared learn it now.
  for (const Member* m : membership_.up()) {
    if (participants.count(m->id()) == 0) {
      start_resync(*membership_.find(m->id()));
    }
  }
  for (const std::string& node : participants) {
    if (Member* m = membership_.find(node)) {
      m->record.placement_version = version;
      std::vector<ExpertRef> resident;
      for (const NodePlacement& np : committed_->nodes) {
        if (np.node_id != node) continue;
        for (const DevicePlacement& d : np.devices) {
          resident.insert(resident.end(), d.experts.begin(), d.experts.end());
        }
      }
      std::sort(resident.begin(), resident.end());
      m->resident = std::move(resident);
    }
  }
}

void SchedulerService::abort_migration(const std::string& reason) {
  const uint64_t version = migration_->version();
  const Status stored =
      store_->abort_placement(version, migration_->record().id, reason, clock_->wall_ms());
  if (!stored.is_ok()) {
    ++counters_.store_errors;
    spdlog::error("cannot record the abort of version {}: {}", version, stored.to_string());
  }
  const std::set<std::string> participants = migration_->participants();
  const std::string trigger = migration_->record().trigger;
  migration_.reset();
  for (const std::string& node : participants) send_to_node(node, proto::Abort{version, reason});
  ++counters_.migrations_aborted;
  // Do not retry a repair or a cold start in a tight loop.
  if (trigger == "coverage_repair" || trigger == "cold_start") {
    retry_after_ms_ = clock_->steady_ms() + options_.down_after_ms();
  }
  spdlog::warn("placement version {} aborted: {}; version {} stays active", version, reason,
               committed_version());
}

Result<Candidate> SchedulerService::operator_candidate(const PlanProblem& plan,
                                                       const nlohmann::json& json) {
  DMOE_ASSIGN_OR_RETURN(const ClusterPlacement wanted,
                        placement_from_json(json, kOperatorPlacement, Endpoints::kOptional));
  placement::Placement p = placement::empty_placement(plan.problem.cluster);
  p.method = "operator placement";
  for (const NodePlacement& n : wanted.nodes) {
    const std::string where = "placement.nodes." + n.node_id;
    const auto node = std::find_if(plan.placed.begin(), plan.placed.end(),
                                   [&](const Member* m) { return m->id() == n.node_id; });
    if (node == plan.placed.end()) {
      return invalid_argument(where + ": node '" + n.node_id +
                              "' is not an up node with memory for experts");
    }
    const size_t n_idx = node - plan.placed.begin();
    const auto& devices = plan.problem.cluster.nodes[n_idx].devices;
    for (const DevicePlacement& d : n.devices) {
      const auto device =
          std::find_if(devices.begin(), devices.end(),
                       [&](const placement::Device& g) { return g.id == d.device; });
      if (device == devices.end()) {
        return invalid_argument(where + ".devices." + d.device + ": node '" + n.node_id +
                                "' has no device '" + d.device + "'");
      }
      std::vector<placement::ExpertIndex>& list = p.experts[n_idx][device - devices.begin()];
      for (const ExpertRef& r : d.experts) {
        // Placements name absolute layers; the solvers' indices cover MoE layers only.
        const int32_t x =
            model_.flat(static_cast<uint32_t>(r.layer), static_cast<uint32_t>(r.expert));
        if (x < 0) {
          return invalid_argument(where + ".devices." + d.device + ": layer " +
                                  std::to_string(r.layer) + " expert " + std::to_string(r.expert) +
                                  " is not an expert of the model");
        }
        list.push_back(x);
      }
      std::sort(list.begin(), list.end());
    }
  }
  return evaluate_candidate(plan, model_, std::move(p));
}

}  // namespace dancemoe::scheduler
