// Event-driven simulation of a DanceMoE cluster serving MoE decode requests
// under one placement policy (the paper's §IV-C, issue 3).
//
// Model of time (all FIFO servers use "start = max(now, busy_until)", exact
// for first-come-first-served when events are handled in time order):
//  - A request decodes its tokens one after another; each token goes through
//    every MoE layer in turn. Per layer: dense compute (attention, router) on
//    the node's device 0; then the token's top-k experts: local ones run on
//    the devices holding them; remote ones are grouped into one message per
//    destination node (DESIGN.md §3), which crosses the link (queue +
//    bytes / bandwidth + RTT / 2 + a fixed per-message software overhead),
//    runs on the destination's devices, and returns one hidden vector. The layer ends when the
//    local work and every reply are done. Expert compute on a device costs a + b * tokens.
//  - A replica is chosen per expert: a destination already used for this
//    layer if it holds the expert, else the holder with the earliest expected
//    start (link queue, then device queue); ties to the lower index.
//  - Re-placement every period_s (if set): statistics since the last adopted
//    placement (the paper's window), delta[n] measured as mean remote-call
//    minus mean local-expert latency since then, the policy, the gate
//    (C(P') + T_mig < C(P) in the policy's objective, unless disabled). The
//    policies also see co-activation pairs as the nodes report them: counted
//    per report window, at most placement.coactivation_pairs per layer. The
//    policies and the gate see a device's load speed as fetching over the link at the migration
//    share then loading: 1 / (1 / load + 1 / (share * bandwidth)). An adopted placement is
//    migrated: every added (node, device, expert) is fetched from the current holder with the least
//    queued migration traffic towards it, throttled (config.h: one transfer at a time per link,
//    chunks only on an idle link, at most a share of its time), then loaded into the device at its
//    load speed; an expert moving between devices of one node is reloaded locally. The new
//    placement becomes active when all loads are done (two-phase, no serving gap). No new
//    re-placement starts while one is migrating.
// Simplifications (documented in docs/placement-report.md): no batching
// across requests, no prefill (the trace has decode tokens only), a message
// to a node is served even if a commit evicted the expert meanwhile.
//
// simulate() is a pure function of its inputs (deterministic); concurrent
// calls on different results are safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "scheduler/sim/config.h"
#include "scheduler/sim/workload.h"

namespace dancemoe::sim {

struct LatencyStats {
  int64_t requests = 0;
  double mean_s = 0.0;
  double p50_s = 0.0;
  double p99_s = 0.0;
  int64_t local_activations = 0;
  int64_t total_activations = 0;
  // (token, layer) steps, those with every expert local, and remote messages
  // sent: a step with any remote expert waits for a round trip, so latency
  // follows local_step_ratio more than local_ratio.
  int64_t steps = 0;
  int64_t local_steps = 0;
  int64_t remote_messages = 0;
  // Per decoded token: the time from the end of the previous token (or the
  // arrival) to the end of this one -- what the runtime study measures.
  int64_t tokens = 0;
  double token_mean_s = 0.0;
  double token_p50_s = 0.0;
  double token_p99_s = 0.0;
  // Hidden states on the wire for remote calls, requests and replies.
  int64_t remote_bytes = 0;
  double local_ratio() const {
    return total_activations > 0 ? static_cast<double>(local_activations) / total_activations : 0;
  }
  double local_step_ratio() const {
    return steps > 0 ? static_cast<double>(local_steps) / steps : 0;
  }
  double messages_per_step() const {
    return steps > 0 ? static_cast<double>(remote_messages) / steps : 0;
  }
};

struct TimelinePoint {
  double t_s = 0.0;               // bucket start
  double local_ratio = 0.0;       // expert activations served locally in the bucket
  double local_step_ratio = 0.0;  // (token, layer) steps of the bucket with every expert local
  double mean_latency_s = 0.0;    // of requests completed in the bucket (0 if none)
  int64_t completed = 0;
};

struct ReplacementRecord {
  double t_s = 0.0;
  double cost_current_s = 0.0;
  double cost_new_s = 0.0;
  double migration_s = 0.0;
  bool adopt = false;
  double committed_at_s = -1.0;  // when the migration finished (-1: not adopted)
  int64_t experts_added = 0;
  uint64_t bytes = 0;
};

struct SimResult {
  std::string policy;
  std::string method;  // how the initial placement was computed
  std::vector<std::string> node_ids;
  std::vector<LatencyStats> nodes;
  LatencyStats overall;
  std::vector<TimelinePoint> timeline;
  std::vector<ReplacementRecord> replacements;
  int64_t migrations = 0;  // adopted and committed re-placements
  int64_t experts_moved = 0;
  uint64_t bytes_moved = 0;
  double initial_local_hit_ratio = 0.0;  // proxy metric of the initial placement on the profile
  double end_s = 0.0;                    // time the last request finished
  int64_t events = 0;
};

Result<SimResult> simulate(const SimConfig& config, const Workload& workload,
                           const std::string& policy);

}  // namespace dancemoe::sim
