// What the scheduler service counts: one named field per event, and the
// refusals by reason. `dancemoe status` shows them under "counters" as
// "<field>_total" and "rejected_<reason>_total" (to_json), the names the CLI
// and dashboards read; add fields, do not rename them.
//
// A plain value owned by SchedulerService (one thread); copy it to read.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

namespace dancemoe::scheduler {

// Why a message was refused (an Error reply, or a refused registration).
enum class Rejection : uint8_t {
  kUndecodable,
  kVersionMismatch,
  kWrongCluster,
  kUnexpectedType,
  kUnregistered,
  kWrongSender,
  kModelMismatch,
  kInvalidRegister,
  kInvalidReport,
  kStaleReady,
  kInvalidRequest,
  kUnknownKey,    // a key not (or no longer) admitted: dropped without an answer
  kNotPermitted,  // a known key asking for what its role may not do
  kKeyBinding,    // a registration against a node id's or a key's binding
};
inline constexpr size_t kRejectionCount = 14;
std::string_view rejection_name(Rejection why);  // "model_mismatch"

// How a placement round ended (also the decision's recorded outcome).
enum class RoundOutcome : uint8_t { kAdopted, kRejected, kSkipped, kError };
inline constexpr size_t kRoundOutcomeCount = 4;
std::string_view round_outcome_name(RoundOutcome outcome);  // "adopted"

struct SchedulerCounters {
  uint64_t messages = 0;
  uint64_t registrations = 0;
  uint64_t register_refused = 0;
  uint64_t heartbeats = 0;
  uint64_t node_acks = 0;
  uint64_t nodes_down = 0;
  uint64_t reports_stored = 0;
  uint64_t reports_duplicate = 0;
  uint64_t reports_stale = 0;
  uint64_t count_entries_stored = 0;
  uint64_t status_requests = 0;
  uint64_t migrations_started = 0;
  uint64_t migrations_committed = 0;
  uint64_t migrations_aborted = 0;
  uint64_t stale_aborts = 0;
  uint64_t resyncs_started = 0;
  uint64_t resyncs_completed = 0;
  uint64_t resyncs_failed = 0;
  uint64_t store_errors = 0;
  uint64_t rejected = 0;  // all reasons
  std::array<uint64_t, kRejectionCount> rejected_by{};
  std::array<uint64_t, kRoundOutcomeCount> rounds{};

  void reject(Rejection why) {
    ++rejected;
    ++rejected_by[static_cast<size_t>(why)];
  }
  uint64_t rejected_for(Rejection why) const { return rejected_by[static_cast<size_t>(why)]; }
  void round(RoundOutcome outcome) { ++rounds[static_cast<size_t>(outcome)]; }
  uint64_t rounds_with(RoundOutcome outcome) const { return rounds[static_cast<size_t>(outcome)]; }

  // {"messages_total": ..., "rejected_model_mismatch_total": ..., ...}
  nlohmann::ordered_json to_json() const;
};

}  // namespace dancemoe::scheduler
