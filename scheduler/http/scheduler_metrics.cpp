#include "scheduler/http/scheduler_metrics.h"

#include <string>

#include "scheduler/daemon/scheduler_counters.h"

namespace dancemoe::scheduler {
namespace {

using nlohmann::ordered_json;

// j[key], or null when j is not an object or has no such key (operator[]
// on a const json with a missing key is undefined).
const ordered_json& field(const ordered_json& j, const char* key) {
  static const ordered_json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

double number_at(const ordered_json& j, const char* key) {
  const ordered_json& v = field(j, key);
  return v.is_number() ? v.get<double>() : 0.0;
}

void gauge(http::PrometheusWriter& out, const char* name, const char* help, double value) {
  out.family(name, "gauge", help);
  out.sample(name, {}, value);
}

void counter(http::PrometheusWriter& out, const char* name, const char* help, double value) {
  out.family(name, "counter", help);
  out.sample(name, {}, value);
}

}  // namespace

void write_scheduler_metrics(http::PrometheusWriter& out, const ordered_json& status) {
  const ordered_json& scheduler = field(status, "scheduler");
  const ordered_json& counters = field(status, "counters");
  gauge(out, "dancemoe_scheduler_uptime_seconds", "Seconds since the scheduler started",
        number_at(scheduler, "uptime_s"));
  gauge(out, "dancemoe_scheduler_database_bytes", "Bytes of the SQLite database, WAL included",
        number_at(scheduler, "db_bytes"));
  gauge(out, "dancemoe_scheduler_placement_version", "The committed placement version (0: none)",
        field(status, "placement").is_object() ? number_at(field(status, "placement"), "version")
                                               : 0.0);

  out.family("dancemoe_scheduler_nodes", "gauge", "Known nodes by state");
  for (const char* state : {"up", "down", "unknown"}) {
    out.sample("dancemoe_scheduler_nodes", {{"state", state}},
               number_at(field(status, "nodes"), state));
  }

  out.family("dancemoe_scheduler_rounds_total", "counter", "Placement rounds by outcome");
  for (size_t i = 0; i < kRoundOutcomeCount; ++i) {
    const std::string outcome(round_outcome_name(static_cast<RoundOutcome>(i)));
    out.sample("dancemoe_scheduler_rounds_total", {{"outcome", outcome}},
               number_at(counters, ("rounds_" + outcome + "_total").c_str()));
  }
  const ordered_json& decision = field(status, "last_decision");
  if (decision.is_object()) {
    out.family("dancemoe_scheduler_gate_seconds", "gauge",
               "The last decision's gate: expected extra latency of the current placement "
               "C(P), of the candidate C(P'), and the migration time T_mig");
    out.sample("dancemoe_scheduler_gate_seconds", {{"term", "current"}},
               number_at(decision, "cost_current_s"));
    out.sample("dancemoe_scheduler_gate_seconds", {{"term", "new"}},
               number_at(decision, "cost_new_s"));
    out.sample("dancemoe_scheduler_gate_seconds", {{"term", "migration"}},
               number_at(decision, "migration_s"));
    gauge(
        out, "dancemoe_scheduler_gate_adopted", "1 if the last decision adopted its candidate",
        field(decision, "adopt").is_boolean() && field(decision, "adopt").get<bool>() ? 1.0 : 0.0);
  }

  out.family("dancemoe_scheduler_migrations_total", "counter", "Two-phase migrations by outcome");
  for (const char* outcome : {"started", "committed", "aborted"}) {
    out.sample("dancemoe_scheduler_migrations_total", {{"outcome", outcome}},
               number_at(counters, ("migrations_" + std::string(outcome) + "_total").c_str()));
  }
  if (field(status, "migration").is_object()) {
    gauge(out, "dancemoe_scheduler_migration_progress",
          "Share of the participants ready for the migration in progress",
          number_at(field(status, "migration"), "progress"));
  }

  out.family("dancemoe_scheduler_reports_total", "counter", "Activation reports received");
  for (const char* outcome : {"stored", "duplicate", "stale"}) {
    out.sample("dancemoe_scheduler_reports_total", {{"outcome", outcome}},
               number_at(counters, ("reports_" + std::string(outcome) + "_total").c_str()));
  }
  counter(out, "dancemoe_scheduler_report_counts_total",
          "(layer, expert) count entries stored from reports",
          number_at(counters, "count_entries_stored_total"));
  counter(out, "dancemoe_scheduler_messages_total", "Messages received on the control port",
          number_at(counters, "messages_total"));
  counter(out, "dancemoe_scheduler_heartbeats_total", "Heartbeats received",
          number_at(counters, "heartbeats_total"));
  counter(out, "dancemoe_scheduler_registrations_total", "Accepted registrations",
          number_at(counters, "registrations_total"));
  counter(out, "dancemoe_scheduler_store_errors_total", "Failed SQLite operations",
          number_at(counters, "store_errors_total"));

  out.family("dancemoe_scheduler_rejected_total", "counter", "Refused messages by reason");
  for (size_t i = 0; i < kRejectionCount; ++i) {
    const std::string reason(rejection_name(static_cast<Rejection>(i)));
    out.sample("dancemoe_scheduler_rejected_total", {{"reason", reason}},
               number_at(counters, ("rejected_" + reason + "_total").c_str()));
  }

  out.family("dancemoe_scheduler_node_local_hit_ratio", "gauge",
             "Share of a node's activations served by its own experts since the committed "
             "placement (absent before its first report)");
  for (const ordered_json& node : field(field(status, "nodes"), "list")) {
    const ordered_json& ratio = field(node, "local_hit_ratio_since_adoption");
    if (!ratio.is_number()) continue;
    out.sample("dancemoe_scheduler_node_local_hit_ratio",
               {{"node", field(node, "id").is_string() ? field(node, "id").get<std::string>()
                                                       : std::string()}},
               ratio.get<double>());
  }
}

}  // namespace dancemoe::scheduler
