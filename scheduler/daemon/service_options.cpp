#include "scheduler/daemon/service_options.h"

#include <algorithm>
#include <cmath>

namespace dancemoe::scheduler {
namespace {

int64_t ms(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1000.0)); }

}  // namespace

ServiceOptions service_options(const SchedulerConfig& c) {
  ServiceOptions o;
  o.cluster_id = c.cluster_id;
  {
    std::string item;
    for (char ch : c.expert_types + ",") {
      if (ch == ',' || ch == ' ') {
        if (!item.empty()) o.allowed_expert_types.push_back(item);
        item.clear();
      } else {
        item += ch;
      }
    }
  }
  o.interval_ms = ms(c.interval_s);
  o.heartbeat_interval_ms = std::max<int64_t>(1, ms(c.heartbeat_interval_s));
  o.heartbeat_misses = c.heartbeat_misses;
  o.report_interval_ms = std::max<int64_t>(1, ms(c.report_interval_s));
  o.prepare_timeout_ms = ms(c.prepare_timeout_s);
  o.cold_start_settle_ms = ms(c.cold_start_settle_s);
  o.retention_check_ms = ms(c.retention_check_s);
  o.planner.policy = c.policy;
  o.planner.horizon_s = c.effective_horizon_s();
  o.planner.default_remote_penalty_s = c.default_remote_penalty_s;
  o.planner.default_load_bytes_per_s = c.default_load_bytes_per_s;
  o.retention.raw_retention_ms = ms(c.raw_retention_s);
  o.retention.bucket_ms = std::max<int64_t>(1, ms(c.rollup_bucket_s));
  o.retention.rollup_retention_ms = ms(c.rollup_retention_s);
  return o;
}

}  // namespace dancemoe::scheduler
