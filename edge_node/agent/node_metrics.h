// The node's own metric families for GET /metrics (Prometheus text), from
// the counters it already keeps for /v1/stats: activations by where they
// were served and the local-hit ratio, local expert calls and remote calls
// per peer (count, failures, bytes, latency histogram), the expert service,
// resident experts, the offload cache, weight gathering, migrations (and the
// local expert store of a partial checkpoint), the scheduler link, and
// continuous batching (sequences, KV blocks, steps) with the prefix cache.
//
// Labels are bounded: `peer` is a node id of the cluster, `served` and
// `state` come from fixed sets. Pure function over a snapshot; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/http/prometheus_text.h"
#include "edge_node/activation/activation_log.h"
#include "edge_node/agent/batch_scheduler.h"
#include "edge_node/migration/migration_executor.h"

namespace dancemoe::node {

struct NodeMetricsInputs {
  ActivationSnapshot activations;
  uint64_t placement_version = 0;
  uint64_t experts_local = 0;  // in the committed routing table
  uint64_t experts_resident = 0;
  uint64_t experts_resident_bytes = 0;
  uint64_t expert_budget_bytes = 0;
  MigrationStatus migration;
  struct Service {
    uint64_t calls = 0, call_tokens = 0, chunks = 0, errors = 0, bad_messages = 0;
    uint64_t refused = 0;  // messages from keys that are not current members
  } service;
  struct Offload {
    uint64_t hits = 0, loads = 0, resident_bytes = 0, capacity_bytes = 0;
  };
  std::optional<Offload> offload;
  struct Gathering {
    uint64_t experts_fetched = 0, experts_cached = 0, weight_bytes = 0;
    uint64_t activation_bytes_avoided = 0, fetch_us = 0, fetch_failures = 0;
  };
  std::optional<Gathering> gathering;  // nodes that serve prompts
  struct Scheduler {
    bool attached = false;
    uint64_t reports_sent = 0, reports_acked = 0, reports_dropped = 0;
  };
  std::optional<Scheduler> scheduler;  // attached mode only
  BatchScheduler::Stats batch;
};

void write_node_metrics(http::PrometheusWriter& out, const NodeMetricsInputs& in);

}  // namespace dancemoe::node
