// LoopMetrics: where the service loop's time goes -- handling each kind of
// message (an ActivationReport's ingest: validate, one SQLite transaction,
// Ack) and its timed work ("tick": periodic placement rounds, migration
// deadlines, heartbeat expiry, retention) -- as histograms for the
// scheduler's GET /metrics (dancemoe_scheduler_loop_seconds{work=...}).
//
// Labels are bounded: message type names of the protocol, "undecodable"
// and "tick". Written by the loop's thread, read by the HTTP endpoint's;
// thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/prometheus_text.h"

namespace dancemoe::scheduler {

class LoopMetrics {
 public:
  void observe(std::string_view work, double seconds);
  void write(http::PrometheusWriter& out) const;

  // Upper bounds in seconds: 100 us (a heartbeat) to 30 s (a large round).
  static std::vector<double> buckets();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<http::BucketHistogram>, std::less<>> by_work_;
};

}  // namespace dancemoe::scheduler
