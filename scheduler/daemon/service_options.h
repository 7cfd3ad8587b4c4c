// The scheduler service's settings, from the configuration file and flags
// (scheduler/config/scheduler_config.h) converted to milliseconds. Plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/config/scheduler_config.h"
#include "scheduler/daemon/message_checks.h"
#include "scheduler/daemon/planner.h"
#include "scheduler/store/retention.h"

namespace dancemoe::scheduler {

struct ServiceOptions {
  std::string cluster_id = "default";
  // Expert precisions (weight_type_name) nodes may hold besides the model
  // file's own; "*" allows any.
  std::vector<std::string> allowed_expert_types;
  int64_t interval_ms = 300'000;
  int64_t heartbeat_interval_ms = 2'000;
  int64_t heartbeat_misses = 3;
  int64_t report_interval_ms = 10'000;
  int64_t prepare_timeout_ms = 120'000;
  int64_t cold_start_settle_ms = 5'000;
  int64_t retention_check_ms = 60'000;
  PlannerOptions planner;
  store::RetentionPolicy retention;
  MessageLimits limits;

  int64_t down_after_ms() const { return heartbeat_interval_ms * heartbeat_misses; }
};

ServiceOptions service_options(const SchedulerConfig& config);

}  // namespace dancemoe::scheduler
