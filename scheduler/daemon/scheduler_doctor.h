// `dancemoe-scheduler --doctor` (and `dancemoe doctor scheduler`): checks
// this machine for a scheduler with the configuration it would start with,
// changing nothing: model (config and headers), database (readable, intact,
// not newer than this build, the same model and cluster id), control port,
// keys (the scheduler's secret key with mode 0600, the node and operator key
// directories). Each failure says what to do. Thread-safe.
#pragma once

#include "common/runtime/doctor_report.h"
#include "scheduler/config/scheduler_config.h"

namespace dancemoe::scheduler {

DoctorReport check_scheduler(const SchedulerConfig& config);

}  // namespace dancemoe::scheduler
