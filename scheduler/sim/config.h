// Configuration of one simulated scenario (dancemoe-sim, DESIGN.md §5 and
// issue 3): cluster, links, model shape, workload, placement schedule.
//
// JSON form (every field optional unless marked; defaults in the structs):
//   {"name": "paper-dsv2lite-30", "seed": 1, "duration_s": 600,
//    "timeline_bucket_s": 10,
//    "model": {"layers": 26, "experts": 64, "top_k": 6,            (required)
//              "expert_bytes": 17301504, "hidden_bytes_per_token": 4096},
//    "link": {"bandwidth_bytes_per_s": 62500000, "rtt_s": 0.001,
//             "message_overhead_s": 0},
//    "nodes": [{"id": "s1", "task": "0", "arrival_rate_per_s": 0.5,  (required)
//               "dense_s_per_layer": 0.0003,
//               "devices": [{"id": "gpu0", "memory_fraction": 0.3,
//                            (or "expert_budget_bytes": ...),
//                            "load_bytes_per_s": 2e9,
//                            "expert_a_s": 5e-5, "expert_b_s": 1e-6}]}],
//    "workload": {"kind": "synthetic", "tokens_per_request": 32,
//                 "tasks": 3, "zipf_min": 0.8, "zipf_max": 1.2,
//                 "shared_ranking": 0.2, "profile_tokens": 20000}
//             or {"kind": "trace", "path": "tokens_sample.csv",
//                 "calibration_fraction": 0.5},
//    "shifts": [{"at_s": 300, "node": "s1", "task": "2"}],
//    "placement": {"policies": ["uniform", "dancemoe", "optimal"],
//                  "period_s": 120, "horizon_s": 120, "gate": true,
//                  "chunk_bytes": 1048576, "migration_link_share": 0.5,
//                  "report_interval_s": 10, "coactivation_pairs": 128}}
// A node's task is a synthetic task index ("0".."tasks-1") or a trace origin
// (a domain of the shared OLMoE trace, e.g. "coding"), or a mixture of
// several joined by '+' ("coding+math", "0+2"): each request then draws one
// of them with equal probability. A relative trace path is resolved against
// the config file's directory.
//
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/base/status.h"

namespace dancemoe::sim {

struct SimDevice {
  std::string id;
  uint64_t expert_budget_bytes = 0;
  double load_bytes_per_s = 2.0e9;  // into device memory (PCIe / disk)
  // Expert compute time for one call: a + b * tokens (calibrated per device).
  double expert_a_s = 5.0e-5;
  double expert_b_s = 1.0e-6;
};

struct SimNode {
  std::string id;
  std::string task;
  double arrival_rate_per_s = 0.5;    // Poisson request arrivals
  double dense_s_per_layer = 3.0e-4;  // attention + router per token and layer, on device 0
  std::vector<SimDevice> devices;
};

// Every ordered pair of nodes is joined by a link of this bandwidth; each
// direction is a FIFO queue; a message takes bytes / bandwidth on the link
// plus half the round-trip time.
struct SimLink {
  double bandwidth_bytes_per_s = 62.5e6;  // 500 Mbit/s
  double rtt_s = 1.0e-3;
  // Fixed software cost of every message, each way (encoding, the transport,
  // decoding, dispatch): added to its delivery time; the runtime study
  // measures it (docs/placement-latency.md). 0: an ideal transport.
  double message_overhead_s = 0.0;
};

struct SimModel {
  int32_t n_layers = 0;
  int32_t n_experts = 0;
  int32_t top_k = 0;
  uint64_t expert_bytes = 0;
  // Bytes of one token's hidden state on the wire (request and reply alike:
  // the remote node returns one gate-weighted sum per token).
  uint64_t hidden_bytes_per_token = 4096;
};

struct WorkloadShift {
  double at_s = 0;
  std::string node;
  std::string task;
};

struct SyntheticWorkload {
  int32_t tokens_per_request = 32;
  int32_t n_tasks = 3;
  double zipf_min = 0.8;
  double zipf_max = 1.2;
  double shared_ranking = 0.2;
  // Tokens per node behind the initial placement's statistics (a profiling
  // run before the simulation starts, from each node's initial task).
  double profile_tokens = 20000;
};

struct TraceWorkload {
  std::filesystem::path path;
  // The first fraction of each origin's requests (in request-id order) forms
  // the profile for the initial placement; the rest is replayed.
  double calibration_fraction = 0.5;
};

struct PlacementSchedule {
  std::vector<std::string> policies = {"uniform", "redundance", "smartmoe",
                                       "eplb",    "dancemoe",   "optimal"};
  double period_s = 0.0;   // re-placement period; 0 = the initial placement stays
  double horizon_s = 0.0;  // H of the gate; 0 = period_s
  bool gate = true;        // false: adopt every re-placement
  // Migration traffic is throttled (DESIGN.md §5.6): weights cross a link in
  // chunks of chunk_bytes, one transfer at a time per link, a chunk only
  // starts when the link is idle (inference messages go first; a chunk on
  // the wire is not preempted), and chunks use at most migration_link_share
  // of the link's time.
  uint64_t chunk_bytes = 1u << 20;
  double migration_link_share = 0.5;
  // Co-activation statistics as the nodes report them
  // (common/placement/coactivation.h): each node's pairs are counted per
  // report window and at most `coactivation_pairs` per layer (those most
  // above independence) reach the policies; 0 reports none.
  double report_interval_s = 10.0;
  int32_t coactivation_pairs = 128;
};

struct SimConfig {
  std::string name = "scenario";
  uint32_t seed = 1;
  double duration_s = 300.0;  // requests arrive in [0, duration); all are run to completion
  double timeline_bucket_s = 10.0;
  SimModel model;
  SimLink link;
  std::vector<SimNode> nodes;
  bool trace_workload = false;
  SyntheticWorkload synthetic;
  TraceWorkload trace;
  std::vector<WorkloadShift> shifts;
  PlacementSchedule placement;
};

// The components of a task mixture ("a+b" -> {"a", "b"}; "a" -> {"a"}).
std::vector<std::string> task_components(const std::string& task);

// Errors are invalid_argument naming the JSON path.
Result<SimConfig> sim_config_from_json(const nlohmann::json& json,
                                       const std::filesystem::path& base_dir);

// Cross-field checks (also run by sim_config_from_json): shapes, positive
// rates, known policies, shift targets, tasks within the synthetic range.
Status validate_sim_config(const SimConfig& config);

}  // namespace dancemoe::sim
