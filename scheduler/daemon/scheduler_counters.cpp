#include "scheduler/daemon/scheduler_counters.h"

#include <string>

namespace dancemoe::scheduler {

std::string_view rejection_name(Rejection why) {
  static constexpr std::array<std::string_view, kRejectionCount> kNames = {
      "undecodable",     "version_mismatch", "wrong_cluster",    "unexpected_type", "unregistered",
      "wrong_sender",    "model_mismatch",   "invalid_register", "invalid_report",  "stale_ready",
      "invalid_request", "unknown_key",      "not_permitted",    "key_binding"};
  return kNames[static_cast<size_t>(why)];
}

std::string_view round_outcome_name(RoundOutcome outcome) {
  static constexpr std::array<std::string_view, kRoundOutcomeCount> kNames = {"adopted", "rejected",
                                                                              "skipped", "error"};
  return kNames[static_cast<size_t>(outcome)];
}

nlohmann::ordered_json SchedulerCounters::to_json() const {
  nlohmann::ordered_json out = {{"messages_total", messages},
                                {"registrations_total", registrations},
                                {"register_refused_total", register_refused},
                                {"heartbeats_total", heartbeats},
                                {"node_acks_total", node_acks},
                                {"nodes_down_total", nodes_down},
                                {"reports_stored_total", reports_stored},
                                {"reports_duplicate_total", reports_duplicate},
                                {"reports_stale_total", reports_stale},
                                {"count_entries_stored_total", count_entries_stored},
                                {"status_requests_total", status_requests},
                                {"migrations_started_total", migrations_started},
                                {"migrations_committed_total", migrations_committed},
                                {"migrations_aborted_total", migrations_aborted},
                                {"stale_aborts_total", stale_aborts},
                                {"resyncs_started_total", resyncs_started},
                                {"resyncs_completed_total", resyncs_completed},
                                {"resyncs_failed_total", resyncs_failed},
                                {"store_errors_total", store_errors},
                                {"rejected_total", rejected}};
  for (size_t i = 0; i < kRejectionCount; ++i) {
    out["rejected_" + std::string(rejection_name(static_cast<Rejection>(i))) + "_total"] =
        rejected_by[i];
  }
  for (size_t i = 0; i < kRoundOutcomeCount; ++i) {
    out["rounds_" + std::string(round_outcome_name(static_cast<RoundOutcome>(i))) + "_total"] =
        rounds[i];
  }
  return out;
}

}  // namespace dancemoe::scheduler
