#include "scheduler/daemon/loop_metrics.h"

namespace dancemoe::scheduler {

std::vector<double> LoopMetrics::buckets() {
  return {1e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30};
}

void LoopMetrics::observe(std::string_view work, double seconds) {
  http::BucketHistogram* h = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_work_.find(work);
    if (it == by_work_.end()) {
      it = by_work_.emplace(std::string(work), std::make_unique<http::BucketHistogram>(buckets()))
               .first;
    }
    h = it->second.get();  // never erased: valid after the lock
  }
  h->observe(seconds);
}

void LoopMetrics::write(http::PrometheusWriter& out) const {
  out.family("dancemoe_scheduler_loop_seconds", "histogram",
             "Time the service loop spent per message type (ActivationReport: report ingest) "
             "and on its timed work (tick: rounds, deadlines, retention)");
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [work, h] : by_work_) {
    out.histogram("dancemoe_scheduler_loop_seconds", {{"work", work}}, h->snapshot());
  }
}

}  // namespace dancemoe::scheduler
