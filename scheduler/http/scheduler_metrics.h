// The scheduler's own metric families for GET /metrics (Prometheus text),
// written from one `status` answer (status_query.h: its "counters" are the
// service's SchedulerCounters under their JSON names):
//
//   dancemoe_scheduler_uptime_seconds, _database_bytes, _placement_version
//   dancemoe_scheduler_nodes{state}                   up / down / unknown
//   dancemoe_scheduler_rounds_total{outcome}          adopted / rejected / skipped / error
//   dancemoe_scheduler_gate_seconds{term}             the last decision's C(P), C(P'),
//                                                     T_mig (current / new / migration)
//   dancemoe_scheduler_gate_adopted                   1 if the last decision adopted
//   dancemoe_scheduler_migrations_total{outcome}      started / committed / aborted
//   dancemoe_scheduler_migration_progress             of the one in progress (absent if none)
//   dancemoe_scheduler_reports_total{outcome}         stored / duplicate / stale (ingest)
//   dancemoe_scheduler_report_counts_total            (layer, expert) entries stored
//   dancemoe_scheduler_messages_total, _heartbeats_total, _registrations_total,
//   dancemoe_scheduler_store_errors_total
//   dancemoe_scheduler_rejected_total{reason}         refused messages by reason
//   dancemoe_scheduler_node_local_hit_ratio{node}     since the committed placement
//
// Labels are bounded: fixed sets, and node ids of the cluster. Pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "common/http/prometheus_text.h"

namespace dancemoe::scheduler {

void write_scheduler_metrics(http::PrometheusWriter& out, const nlohmann::ordered_json& status);

}  // namespace dancemoe::scheduler
