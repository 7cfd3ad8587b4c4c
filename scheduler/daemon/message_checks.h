// Model-dependent and plausibility checks of what nodes send, after the
// codec verified the bytes (common/proto/codec.h checks structure, string
// and list bounds, finite numbers; the ranges that need the model or common
// sense are checked here). Every failure is invalid_argument naming the
// field, the value and what was expected; the service answers it with an
// Error and counts it.
//
// Report limits (why each exists):
//   - every (layer, expert) must be an expert of the model (layer a MoE layer,
//     expert < n_experts), listed once;
//   - a count cannot exceed the tokens of the window (a token picks an expert
//     at most once per layer), and a layer's counts sum to at most
//     tokens x top-k: this is what turns a negative number sent as unsigned
//     (4294967295) into an error instead of a huge weight;
//   - local hits cannot exceed the activations;
//   - a co-activation pair names two experts a < b of one MoE layer, once,
//     with a count no larger than either expert's count in the report, at
//     most max_pairs_per_layer per layer;
//   - windows last at most max_window_ms, tokens per report at most
//     max_tokens, latencies at most max_latency_us, peers at most max_peers
//     (each named once, not the node itself) -- absurd values would
//     otherwise skew the placement for days.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "common/base/status.h"
#include "common/proto/messages.h"
#include "scheduler/daemon/model_info.h"
#include "scheduler/store/records.h"

namespace dancemoe::scheduler {

struct MessageLimits {
  int64_t max_window_ms = int64_t{24} * 3600 * 1000;
  uint64_t max_tokens = uint64_t{1} << 40;
  uint64_t max_requests = uint64_t{1} << 40;
  uint64_t max_calls = uint64_t{1} << 48;
  uint64_t max_bytes = uint64_t{1} << 56;
  double max_latency_us = 3600.0 * 1e6;
  size_t max_peers = 4096;
  size_t max_devices = 64;
  uint64_t max_device_budget_bytes = uint64_t{1} << 50;  // 1 PiB
  double max_load_bytes_per_s = 1e13;
  size_t max_node_id_chars = 128;
  size_t max_pairs_per_layer = 4096;  // co-activation pairs of one layer in one report
};

// Node ids: 1..128 characters of [A-Za-z0-9._:@-] (they appear in logs,
// the database and terminal output).
Status check_node_id(const std::string& id, const MessageLimits& limits);

// A Register from `sender` (the envelope's sender). Does not check the
// model id (the service does, to answer with a RegisterReply naming both).
Status check_register(const proto::Register& reg, const std::string& sender, const ModelInfo& model,
                      const MessageLimits& limits);

// Turns a report into the stored record (counts sorted, zeros dropped, per
// peer statistics kept) or says what is wrong with it.
Result<store::ReportRecord> check_report(const proto::ActivationReport& report,
                                         const std::string& node_id, uint64_t sequence,
                                         int64_t received_ms, const ModelInfo& model,
                                         const MessageLimits& limits);

}  // namespace dancemoe::scheduler
