// ActivationLog: what this node's requests did, for the scheduler (DESIGN.md
// §5.1) and for /v1/stats -- activation counts per (layer, expert) for the
// tokens this node serves (the router's decisions, whoever computed the
// expert), how many of those activations this node's own experts served
// (local hits), and call statistics: local expert compute latency per
// layer, per device of this node the pairs it computed and the time it was
// busy (the device's speed, for placement), and per peer the remote calls'
// latency, bytes and failures.
//
// Each window also counts co-activation -- which experts of a layer the same
// token picked (common/placement/coactivation.h) -- and its report lists, per
// layer, at most `pairs_per_layer` pairs, those most above independence
// (0: none). Pairs are counted with the forward's other counts, when its last
// MoE layer is recorded.
//
// Statistics are kept per report window. A window never spans two placement
// versions: set_placement_version() closes the current window, so a
// report's local-hit ratio can be checked against that one placement. Nor
// does a window split a forward pass: a forward's tokens and per-layer
// counts are staged and enter the window together when its last MoE layer
// is recorded (or when the next forward starts, after a failed one), so in
// every report each layer's counts sum to at most tokens x top-k -- the
// scheduler refuses a report that breaks this.
// Cumulative totals since start and since the current version are kept for
// /v1/stats.
//
// Thread-safe: the executor records (one mutex, uncontended in practice),
// the scheduler link takes windows, HTTP reads snapshots.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/inference/routing.h"
#include "common/model/model_config.h"
#include "common/placement/coactivation.h"
#include "common/proto/messages.h"
#include "edge_node/activation/latency_histogram.h"

namespace dancemoe::node {

// Activations by where they were served.
struct ServedCounts {
  uint64_t activations = 0;  // (token, expert) pairs routed
  uint64_t local = 0;        // computed by an expert this node holds
  uint64_t remote = 0;       // computed by a peer
  uint64_t offloaded = 0;    // loaded into the offload cache and computed here
  uint64_t remote_calls = 0;
  uint64_t remote_failures = 0;  // calls that timed out or got an Error (then retried)
  uint64_t tokens = 0;
  uint64_t requests = 0;
  // (token, MoE layer) steps, and those whose experts were all held here:
  // a step with any remote expert waits for the network (issue 17).
  uint64_t steps = 0;
  uint64_t local_steps = 0;
  uint64_t remote_bytes = 0;  // sent and received by remote calls
};

struct ActivationSnapshot {
  uint64_t placement_version = 0;
  ServedCounts total;          // since start
  ServedCounts since_version;  // since placement_version was committed
  // counts[layer][expert] since placement_version (dense; dense layers are zero rows).
  std::vector<std::vector<uint64_t>> counts_since_version;
  struct Peer {
    std::string node_id;
    uint64_t calls = 0;
    uint64_t failures = 0;
    uint64_t bytes = 0;
    double mean_latency_us = 0;
    double p99_latency_us = 0;
    LatencyHistogram latency;  // successful calls (for /metrics)
  };
  std::vector<Peer> peers;  // since start
  struct Device {
    std::string name;
    uint64_t pairs = 0;
    double busy_us = 0;
    double us_per_pair() const { return pairs ? busy_us / static_cast<double>(pairs) : 0.0; }
  };
  std::vector<Device> devices;  // since start, in the node's device order
  uint64_t local_calls = 0;
  double local_mean_latency_us = 0;
  double local_p99_latency_us = 0;
  LatencyHistogram local_latency;
};

class ActivationLog {
 public:
  // `devices` names this node's devices, in order (device indices of
  // record_device_compute refer to it).
  explicit ActivationLog(const ModelConfig& config, std::vector<std::string> devices = {"cpu"},
                         int32_t pairs_per_layer = kDefaultPairsPerLayer);

  // Co-activation pairs per layer in a report: 128 lists every pair above
  // independence of a typical 10 s window of a 64-expert model and keeps a
  // report of a 16-layer model near 20 kB (docs/placement-latency.md).
  static constexpr int32_t kDefaultPairsPerLayer = 128;

  // One MoE layer of a forward: every routed pair counts; `n_local` of them
  // were computed by experts this node holds, `n_offloaded` by the offload
  // cache, the rest remotely.
  void record_layer(int64_t layer, const RoutingDecision& routing, uint64_t n_local,
                    uint64_t n_offloaded);
  // Of the layer's `steps` tokens, `local_steps` had every expert held here.
  void record_steps(uint64_t steps, uint64_t local_steps);
  void record_local_call(double latency_us);
  // Device `device` computed `pairs` (token, expert) pairs in `busy_us`.
  void record_device_compute(int32_t device, uint64_t pairs, double busy_us);
  void record_remote_call(const std::string& peer, double latency_us, uint64_t bytes, bool ok);
  void record_tokens(uint64_t n_tokens);
  void record_request();

  // Closes the current window when the version changes.
  void set_placement_version(uint64_t version, uint64_t now_ms);

  // Closed windows and the current one (closed at now_ms), oldest first; each
  // becomes one ActivationReport. Empty windows are skipped.
  std::vector<proto::ActivationReport> take_windows(uint64_t now_ms);

  ActivationSnapshot snapshot() const;
  ServedCounts totals() const;

 private:
  struct PeerWindow {
    LatencyHistogram latency;
    uint64_t bytes = 0;
    uint64_t failures = 0;
  };
  struct DeviceWindow {
    uint64_t pairs = 0;
    double busy_us = 0;
  };
  struct Window {
    uint64_t start_ms = 0;
    uint64_t placement_version = 0;
    ServedCounts served;
    std::vector<uint32_t> counts;  // [layer * n_experts + expert]
    LatencyHistogram local;
    std::map<std::string, PeerWindow> peers;
    std::vector<DeviceWindow> devices;  // [device]
  };
  // One forward pass's activity, not yet in any window.
  struct StagedForward {
    ServedCounts served;
    std::vector<size_t> counted;  // count indices, one per routed pair
    // Per recorded MoE layer: the layer and its routing (ids, [tokens, k]).
    std::vector<std::pair<int64_t, RoutingDecision>> routings;
    bool empty() const { return served.tokens == 0 && served.activations == 0; }
  };
  void commit_staged();  // mutex_ held
  void reset_window(Window* w, uint64_t start_ms) const;
  proto::ActivationReport to_report(const Window& w, uint64_t end_ms) const;
  std::vector<proto::ExpertPair> take_pairs();  // the current window's, then cleared
  static void add(ServedCounts* into, const ServedCounts& delta);

  static constexpr size_t kMaxClosedWindows = 64;

  int64_t n_layers_;
  int64_t n_experts_;
  int32_t pairs_per_layer_;
  // Co-activation of the current window (closed windows keep their report's
  // pairs in closed_pairs_): one counter, since a window closes before the
  // next one counts.
  CoActivationCounter pairs_;
  std::vector<std::string> device_names_;
  int64_t last_moe_layer_ = -1;
  StagedForward staged_;
  mutable std::mutex mutex_;
  Window current_;
  std::deque<std::pair<Window, uint64_t>> closed_;           // (window, end_ms)
  std::deque<std::vector<proto::ExpertPair>> closed_pairs_;  // one per closed window
  uint64_t version_ = 0;
  ServedCounts total_;
  ServedCounts since_version_;
  std::vector<uint64_t> counts_since_version_;
  LatencyHistogram local_total_;
  std::map<std::string, PeerWindow> peers_total_;
  std::vector<DeviceWindow> devices_total_;
};

uint64_t unix_now_ms();

}  // namespace dancemoe::node
