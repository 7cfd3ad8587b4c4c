// StatusQuery: the read-only answers to the `dancemoe` CLI's status
// requests -- the cluster summary ("status"), every node ("nodes"), the
// committed placement ("placement") and recent migrations and decisions
// ("migrations") -- as JSON, the CLI's contract: add fields, do not rename
// them. It reads the service's state through StatusView's const references
// and only reads the store; rounds, proposals and operator placements, which
// plan or change things, stay in SchedulerService.
//
// Built per request on the service's thread, over state that outlives it;
// not thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/base/status.h"
#include "common/runtime/clock.h"
#include "scheduler/daemon/membership.h"
#include "scheduler/daemon/migration.h"
#include "scheduler/daemon/model_info.h"
#include "scheduler/daemon/scheduler_counters.h"
#include "scheduler/daemon/service_options.h"
#include "scheduler/store/store.h"

namespace dancemoe::scheduler {

struct StatusView {
  const ServiceOptions& options;
  const ModelInfo& model;
  store::Store& store;  // read only
  const Clock& clock;
  const Membership& membership;
  const std::optional<store::PlacementRecord>& committed;
  const std::optional<Migration>& migration;
  const SchedulerCounters& counters;
  int64_t started_ms = 0;  // steady time the service started
};

class StatusQuery {
 public:
  explicit StatusQuery(const StatusView& view) : v_(view) {}

  Result<nlohmann::ordered_json> status() const;
  Result<nlohmann::ordered_json> nodes() const;
  // The committed placement (not_found before the first), only `layer` when given.
  Result<nlohmann::ordered_json> placement(std::optional<int> layer) const;
  Result<nlohmann::ordered_json> migrations(int limit) const;

  // A placement in its one JSON form plus what the scheduler knows of it and,
  // per layer, the holders of each expert (also used for proposals).
  nlohmann::ordered_json placement_json(const store::PlacementRecord& placement,
                                        std::optional<int> layer) const;
  static nlohmann::ordered_json decision_json(const store::DecisionRecord& decision);
  // A node's devices: name, kind, budget, what the committed placement puts
  // there (experts, bytes), load bandwidth and measured compute speed.
  nlohmann::ordered_json devices_json(const Member& member) const;

 private:
  // Per participant of the migration in progress: ready, experts added and
  // removed, bytes to load.
  nlohmann::ordered_json migration_participants_json() const;

  const StatusView& v_;
};

}  // namespace dancemoe::scheduler
