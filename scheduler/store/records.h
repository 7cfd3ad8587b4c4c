// Plain values the scheduler store reads and writes (schema.h lists the
// tables). Times are unix milliseconds of the scheduler's clock; layers are
// the model's layer indices as on the wire (dense layers never appear).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/proto/messages.h"
#include "scheduler/store/count_blob.h"
#include "scheduler/store/pair_blob.h"

namespace dancemoe::store {

// Reports' per-device compute enters a device's figures with this decay per
// report, so its speed follows the last few hundred windows.
inline constexpr double kDeviceComputeDecay = 0.9;

struct DeviceRecord {
  std::string name;
  uint64_t expert_budget_bytes = 0;
  double load_bytes_per_s = 0.0;
  std::string kind;  // "cpu", "cuda"; empty from nodes before protocol 1.1
  // Decayed totals of the expert compute the node reported for this device.
  double compute_pairs = 0.0;
  double compute_busy_us = 0.0;

  // Measured microseconds per (token, expert) pair; 0 when never measured.
  double us_per_pair() const { return compute_pairs > 0 ? compute_busy_us / compute_pairs : 0.0; }
  void add_compute(uint64_t pairs, double busy_us) {
    compute_pairs = compute_pairs * kDeviceComputeDecay + static_cast<double>(pairs);
    compute_busy_us = compute_busy_us * kDeviceComputeDecay + busy_us;
  }
};

struct NodeRecord {
  std::string node_id;
  int64_t first_registered_ms = 0;
  int64_t last_registered_ms = 0;
  std::string expert_endpoint;
  std::string http_endpoint;
  uint64_t host_memory_bytes = 0;
  uint64_t placement_version = 0;
  std::vector<DeviceRecord> devices;
  // From the last Register, not stored: a node re-registers after a restart.
  uint64_t migration_headroom_bytes = 0;
};

// A node id bound to the CURVE key that first registered it (docs/security.md).
struct KeyBinding {
  std::string node_id;
  std::string public_key;  // Z85
  std::string key_name;    // the admitted key's name when it was bound
  int64_t bound_ms = 0;
};

// One validated ActivationReport as stored. `counts` sorted by (layer,
// expert), no repeats, no zeros; the remote aggregates are over all peers
// (calls-weighted mean, max of the p99s).
struct ReportRecord {
  std::string node_id;
  uint64_t sequence = 0;
  int64_t window_start_ms = 0;
  int64_t window_end_ms = 0;
  int64_t received_ms = 0;
  uint64_t tokens = 0;
  uint64_t requests = 0;
  uint64_t activations = 0;  // sum of counts
  uint64_t local_hits = 0;
  uint64_t local_calls = 0;
  double local_mean_us = 0.0;
  double local_p99_us = 0.0;
  uint64_t placement_version = 0;
  std::vector<CountEntry> counts;
  std::vector<PairEntry> pairs;  // co-activation, sorted by (layer, a, b), no zeros
  std::vector<proto::PeerCallStats> peers;
  std::vector<proto::DeviceCompute> devices;  // of the reporting node
};

enum class InsertOutcome {
  kStored,
  kDuplicate,  // the same (node, sequence, window start) is already stored
  kStale,      // older than what retention already rolled up for the node
};

// Sums over reports (raw and rolled up) of one node in a time range.
struct PeerTotals {
  uint64_t calls = 0;
  double latency_sum_us = 0.0;  // sum of calls * mean latency
  uint64_t bytes = 0;
  uint64_t failures = 0;
};

struct NodeTotals {
  uint64_t n_reports = 0;
  uint64_t tokens = 0;
  uint64_t requests = 0;
  uint64_t activations = 0;
  uint64_t local_hits = 0;
  uint64_t local_calls = 0;
  double local_latency_sum_us = 0.0;
  uint64_t remote_calls = 0;
  double remote_latency_sum_us = 0.0;
  uint64_t remote_bytes = 0;
  uint64_t remote_failures = 0;
  std::map<std::string, PeerTotals> peers;

  void add(const NodeTotals& other);
  // local_hits / activations; nullopt when nothing was observed.
  std::optional<double> local_hit_ratio() const;
  std::optional<double> local_mean_us() const;
  std::optional<double> remote_mean_us() const;
};

// A placement as stored: per node its devices (in the node's device order)
// and the experts each holds. Nodes with no experts still appear (they route).
struct PlacementRecord {
  uint64_t version = 0;
  std::string policy;
  std::string method;
  std::string trigger;  // "cold_start", "periodic", "on_demand", "coverage_repair", "operator"
  std::string state;    // "preparing", "committed", "aborted", "superseded"
  int64_t created_ms = 0;
  std::optional<int64_t> committed_ms;
  std::optional<int64_t> ended_ms;
  int64_t decision_id = 0;
  std::vector<NodePlacement> nodes;
};

struct DecisionRecord {
  int64_t id = 0;
  int64_t time_ms = 0;
  std::string trigger;
  std::string policy;
  std::string outcome;  // "adopted", "rejected", "error", "skipped"
  double cost_current_s = 0.0;
  double cost_new_s = 0.0;
  double migration_s = 0.0;
  uint64_t migration_bytes = 0;
  double local_hit_ratio_current = 0.0;
  double local_hit_ratio_new = 0.0;
  double window_s = 0.0;
  int64_t n_nodes = 0;
  uint64_t from_version = 0;
  uint64_t version = 0;  // the version started, 0 if none
  std::string message;
};

struct MigrationRecord {
  int64_t id = 0;
  uint64_t from_version = 0;
  uint64_t to_version = 0;
  std::string trigger;
  int64_t started_ms = 0;
  std::optional<int64_t> ended_ms;
  uint64_t bytes = 0;
  int64_t n_nodes = 0;
  std::string outcome;  // "preparing", "committed", "aborted"
  std::string reason;
};

}  // namespace dancemoe::store
