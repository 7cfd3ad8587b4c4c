// Shared pieces of the scheduler integration tests: the daemon's fast flags
// (seconds become tenths so each test takes a few seconds), and protocol
// peers for the tiny model.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/placement_experts.h"
#include "tests/support/protocol_peer.h"
#include "tests/support/scheduler_process.h"

namespace dancemoe::testing {

// One expert of the tiny model (bf16 gate + up + down of 64 x 32).
inline constexpr uint64_t kTinyExpertBytes = 3 * 64 * 32 * 2;

// No periodic round during a test (rounds are triggered on demand); the
// gate's horizon stays the default 300 s.
// A scheduler of `model` that settles fast but plans only when asked (an
// hour's interval), then `extra`.
inline std::vector<std::string> model_scheduler_flags(const std::filesystem::path& model,
                                                      std::vector<std::string> extra = {}) {
  std::vector<std::string> flags = {
      "--model",           model.string(), "--heartbeat-interval", "0.2",
      "--report-interval", "0.4",          "--cold-start-settle",  "0.5",
      "--prepare-timeout", "30",           "--interval",           "3600"};
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

// A node's arguments to attach to `scheduler` as `name`, then `extra`.
inline std::vector<std::string> attached_args(SchedulerProcess& scheduler, const std::string& name,
                                              std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--scheduler", scheduler.endpoint()};
  for (const std::string& a : scheduler.node_args(name)) args.push_back(a);
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

inline std::vector<std::string> fast_scheduler_flags() {
  return {"--heartbeat-interval",
          "0.2",
          "--heartbeat-misses",
          "3",
          "--report-interval",
          "0.5",
          "--cold-start-settle",
          "0.3",
          "--prepare-timeout",
          "3",
          "--interval",
          "3600",
          "--horizon",
          "300",
          "--retention-check",
          "3600"};
}

// Replaces the value of `flag` in `flags` (or appends it).
inline void set_flag(std::vector<std::string>& flags, const std::string& flag,
                     const std::string& value) {
  for (size_t i = 0; i + 1 < flags.size(); ++i) {
    if (flags[i] == flag) {
      flags[i + 1] = value;
      return;
    }
  }
  flags.push_back(flag);
  flags.push_back(value);
}

// A protocol peer with node key `id` (admitted), registered with `scheduler`.
inline std::unique_ptr<ProtocolPeer> make_peer(SchedulerProcess& scheduler, const std::string& id,
                                               uint64_t slots, double load_bytes_per_s = 1e9) {
  PeerOptions o;
  o.scheduler = scheduler.endpoint();
  o.curve = scheduler.node_curve(id);
  o.node_id = id;
  o.model_id = tiny_model().model_id;
  o.devices = {{"gpu0", slots * kTinyExpertBytes, load_bytes_per_s, "cuda"}};
  o.expert_endpoint = "tcp://127.0.0.1:" + std::to_string(6000 + id[0]);
  auto peer = std::make_unique<ProtocolPeer>(o);
  peer->start();
  return peer;
}

// A report in which each listed expert was picked `count` times, with
// measured local and remote latencies (delta = 2 ms).
inline proto::ActivationReport tiny_report(const std::vector<ExpertRef>& experts, uint32_t count,
                                           uint64_t window_start_ms) {
  proto::ActivationReport r;
  r.window_start_ms = window_start_ms;
  r.window_end_ms = window_start_ms + 500;
  r.tokens = 100000;
  r.requests = 3;
  for (const ExpertRef& x : experts) r.counts.push_back({x.layer, x.expert, count});
  r.local_calls = 100;
  r.local_mean_latency_us = 100.0;
  r.local_p99_latency_us = 200.0;
  r.remote.push_back({"peer-x", 100, 2100.0, 4000.0, 100 * 8192, 0});
  return r;
}

}  // namespace dancemoe::testing
