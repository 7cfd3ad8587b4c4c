#include "edge_node/agent/node_metrics.h"

namespace dancemoe::node {
namespace {

http::BucketHistogram::Snapshot seconds_histogram(const LatencyHistogram& h) {
  http::BucketHistogram::Snapshot s;
  s.upper_bounds = http::call_seconds_buckets();
  for (double bound : s.upper_bounds) s.cumulative.push_back(h.count_at_most_us(bound * 1e6));
  s.cumulative.push_back(h.count());
  s.sum = h.sum_us() * 1e-6;
  s.count = h.count();
  return s;
}

void one(http::PrometheusWriter& out, const char* name, const char* type, const char* help,
         double value) {
  out.family(name, type, help);
  out.sample(name, {}, value);
}

}  // namespace

void write_node_metrics(http::PrometheusWriter& out, const NodeMetricsInputs& in) {
  const ActivationSnapshot& a = in.activations;
  const auto d = [](uint64_t v) { return static_cast<double>(v); };

  out.family("dancemoe_node_activations_total", "counter",
             "(token, expert) activations routed by this node's requests, by who computed them");
  out.sample("dancemoe_node_activations_total", {{"served", "local"}}, d(a.total.local));
  out.sample("dancemoe_node_activations_total", {{"served", "remote"}}, d(a.total.remote));
  out.sample("dancemoe_node_activations_total", {{"served", "offloaded"}}, d(a.total.offloaded));
  const ServedCounts& v = a.since_version;
  one(out, "dancemoe_node_local_hit_ratio", "gauge",
      "share of activations served by this node's own experts since the committed placement",
      v.activations ? d(v.local) / d(v.activations) : 0.0);
  one(out, "dancemoe_node_forward_tokens_total", "counter",
      "tokens run through the model (prompt and generated)", d(a.total.tokens));
  one(out, "dancemoe_node_generation_requests_total", "counter", "generations run by the engine",
      d(a.total.requests));

  out.family("dancemoe_node_local_expert_call_seconds", "histogram",
             "latency of computing this node's experts for one layer");
  out.histogram("dancemoe_node_local_expert_call_seconds", {}, seconds_histogram(a.local_latency));
  out.family("dancemoe_node_remote_calls_total", "counter", "ExpertCalls sent, per peer");
  for (const auto& p : a.peers) {
    out.sample("dancemoe_node_remote_calls_total", {{"peer", p.node_id}}, d(p.calls));
  }
  out.family("dancemoe_node_remote_call_failures_total", "counter",
             "ExpertCalls that timed out or got an Error, per peer");
  for (const auto& p : a.peers) {
    out.sample("dancemoe_node_remote_call_failures_total", {{"peer", p.node_id}}, d(p.failures));
  }
  out.family("dancemoe_node_remote_wire_bytes_total", "counter",
             "hidden-state bytes of ExpertCalls and their results (sent + received), per peer");
  for (const auto& p : a.peers) {
    out.sample("dancemoe_node_remote_wire_bytes_total", {{"peer", p.node_id}}, d(p.bytes));
  }
  out.family("dancemoe_node_remote_call_seconds", "histogram",
             "round trip of successful ExpertCalls, per peer");
  for (const auto& p : a.peers) {
    out.histogram("dancemoe_node_remote_call_seconds", {{"peer", p.node_id}},
                  seconds_histogram(p.latency));
  }

  one(out, "dancemoe_node_placement_version", "gauge", "committed placement version",
      d(in.placement_version));
  one(out, "dancemoe_node_experts_local", "gauge",
      "experts this node serves in the committed placement", d(in.experts_local));
  one(out, "dancemoe_node_experts_resident", "gauge",
      "experts loaded in memory (during a migration: old and new)", d(in.experts_resident));
  one(out, "dancemoe_node_experts_resident_bytes", "gauge", "bytes of the resident experts",
      d(in.experts_resident_bytes));
  one(out, "dancemoe_node_expert_budget_bytes", "gauge", "memory budget for experts",
      d(in.expert_budget_bytes));

  const MigrationStatus& m = in.migration;
  out.family("dancemoe_node_migration_experts_total", "counter",
             "experts moved by migrations, by how (loaded from local files, fetched from a peer, "
             "evicted)");
  out.sample("dancemoe_node_migration_experts_total", {{"action", "loaded"}}, d(m.experts_loaded));
  out.sample("dancemoe_node_migration_experts_total", {{"action", "fetched"}},
             d(m.experts_fetched));
  out.sample("dancemoe_node_migration_experts_total", {{"action", "evicted"}},
             d(m.experts_evicted));
  out.family("dancemoe_node_migration_state", "gauge", "1 for the migration executor's state");
  for (const char* state : {"idle", "loading", "ready", "failed"}) {
    out.sample("dancemoe_node_migration_state", {{"state", state}}, m.state == state ? 1.0 : 0.0);
  }
  one(out, "dancemoe_node_migration_bytes_done", "gauge",
      "bytes loaded of the migration in progress (or the last one)", d(m.bytes_done));
  out.family("dancemoe_node_expert_store_writes_total", "counter",
             "fetched experts written to the local expert store (a partial checkpoint's "
             "experts/), by outcome");
  out.sample("dancemoe_node_expert_store_writes_total", {{"outcome", "written"}},
             d(m.experts_stored));
  out.sample("dancemoe_node_expert_store_writes_total", {{"outcome", "failed"}},
             d(m.store_failures));

  out.family("dancemoe_node_service_calls_total", "counter",
             "ExpertCalls served to peers (and their outcomes)");
  out.sample("dancemoe_node_service_calls_total", {{"outcome", "served"}}, d(in.service.calls));
  out.sample("dancemoe_node_service_calls_total", {{"outcome", "error"}}, d(in.service.errors));
  out.sample("dancemoe_node_service_calls_total", {{"outcome", "bad_message"}},
             d(in.service.bad_messages));
  out.sample("dancemoe_node_service_calls_total", {{"outcome", "refused_key"}},
             d(in.service.refused));
  one(out, "dancemoe_node_service_call_tokens_total", "counter",
      "tokens computed for peers' ExpertCalls", d(in.service.call_tokens));
  one(out, "dancemoe_node_service_weight_chunks_total", "counter",
      "expert weight chunks sent to peers (migrations)", d(in.service.chunks));

  if (in.offload) {
    one(out, "dancemoe_node_offload_cache_hits_total", "counter",
        "offload-cache computations with the expert already loaded", d(in.offload->hits));
    one(out, "dancemoe_node_offload_cache_loads_total", "counter",
        "experts loaded into the offload cache", d(in.offload->loads));
    one(out, "dancemoe_node_offload_cache_resident_bytes", "gauge",
        "bytes held by the offload cache", d(in.offload->resident_bytes));
  }
  if (in.gathering) {
    const NodeMetricsInputs::Gathering& g = *in.gathering;
    out.family("dancemoe_node_gather_experts_total", "counter",
               "remote experts computed here instead of sending their tokens, by where the "
               "weights came from");
    out.sample("dancemoe_node_gather_experts_total", {{"weights", "fetched"}},
               d(g.experts_fetched));
    out.sample("dancemoe_node_gather_experts_total", {{"weights", "cached"}}, d(g.experts_cached));
    one(out, "dancemoe_node_gather_weight_bytes_total", "counter",
        "expert weight bytes fetched by weight gathering", d(g.weight_bytes));
    one(out, "dancemoe_node_gather_activation_bytes_avoided_total", "counter",
        "hidden-state bytes (both ways) weight gathering did not send",
        d(g.activation_bytes_avoided));
    one(out, "dancemoe_node_gather_fetch_seconds_total", "counter",
        "time spent fetching gathered weights", d(g.fetch_us) / 1e6);
    one(out, "dancemoe_node_gather_fetch_failures_total", "counter",
        "gathered experts whose fetch failed (their tokens were sent)", d(g.fetch_failures));
  }
  if (in.scheduler) {
    one(out, "dancemoe_node_scheduler_attached", "gauge", "1 while attached to the scheduler",
        in.scheduler->attached ? 1.0 : 0.0);
    out.family("dancemoe_node_reports_total", "counter", "activation reports, by outcome");
    out.sample("dancemoe_node_reports_total", {{"outcome", "sent"}}, d(in.scheduler->reports_sent));
    out.sample("dancemoe_node_reports_total", {{"outcome", "acked"}},
               d(in.scheduler->reports_acked));
    out.sample("dancemoe_node_reports_total", {{"outcome", "dropped"}},
               d(in.scheduler->reports_dropped));
  }
  const BatchScheduler::Stats& b = in.batch;
  one(out, "dancemoe_node_batch_sequences", "gauge", "sequences being generated together",
      static_cast<double>(b.active));
  one(out, "dancemoe_node_batch_waiting", "gauge", "sequences waiting for KV blocks or a slot",
      static_cast<double>(b.waiting));
  one(out, "dancemoe_node_batch_max_sequences", "gauge", "sequences that may run together",
      static_cast<double>(b.max_sequences));
  one(out, "dancemoe_node_kv_blocks_used", "gauge", "KV blocks reserved by running sequences",
      static_cast<double>(b.blocks_used));
  one(out, "dancemoe_node_kv_blocks_total", "gauge", "the KV block budget (--kv-memory)",
      static_cast<double>(b.blocks_total));
  one(out, "dancemoe_node_kv_block_tokens", "gauge", "positions per KV block",
      static_cast<double>(b.block_tokens));
  one(out, "dancemoe_node_batch_steps_total", "counter", "batched forward steps", d(b.steps));
  one(out, "dancemoe_node_batch_step_tokens_total", "counter", "tokens run by batched steps",
      d(b.step_tokens));
  one(out, "dancemoe_node_batch_step_sequences_total", "counter",
      "sequences in batched steps (divided by the steps: the mean batch width)",
      d(b.step_sequences));
  one(out, "dancemoe_node_batch_interjections_total", "counter",
      "steps of new prompts run between two layers of a running step", d(b.interjections));
  const PrefixCache::Stats& pc = b.prefix;
  one(out, "dancemoe_node_prefix_cache_hits_total", "counter",
      "prompts that reused a cached prefix's KV", d(pc.hits));
  one(out, "dancemoe_node_prefix_cache_misses_total", "counter",
      "prompts that found no cached prefix", d(pc.misses));
  one(out, "dancemoe_node_prefix_cache_saved_tokens_total", "counter",
      "prompt tokens whose KV was reused instead of computed", d(pc.saved_tokens));
  one(out, "dancemoe_node_prefix_cache_evictions_total", "counter",
      "cached prefixes dropped for room", d(pc.evictions));
  one(out, "dancemoe_node_prefix_cache_entries", "gauge", "cached prefixes", d(pc.entries));
  one(out, "dancemoe_node_prefix_cache_bytes", "gauge", "bytes held by cached prefixes",
      static_cast<double>(pc.bytes));
  one(out, "dancemoe_node_prefix_cache_budget_bytes", "gauge", "the prefix cache's budget",
      static_cast<double>(pc.budget_bytes));
}

}  // namespace dancemoe::node
