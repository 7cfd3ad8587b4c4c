// Prometheus text exposition format (version 0.0.4), written by hand: one
// "# HELP" and "# TYPE" line per metric family, then its samples
// `name{label="value",...} number`. Label values are escaped (\\, \", \n).
//
// BucketHistogram: a histogram with fixed upper bounds (seconds), cumulative
// on output as Prometheus expects (`_bucket{le=...}`, `_sum`, `_count`).
// BucketHistogram is thread-safe (a mutex); PrometheusWriter is not (one per
// scrape).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dancemoe::http {

using Labels = std::vector<std::pair<std::string, std::string>>;

class BucketHistogram {
 public:
  explicit BucketHistogram(std::vector<double> upper_bounds);
  void observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf last
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), +Inf last
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Upper bounds in seconds for request-scale latencies (5 ms .. 2 min).
std::vector<double> request_seconds_buckets();
// Upper bounds in seconds for one expert call (50 us .. 1 s).
std::vector<double> call_seconds_buckets();

class PrometheusWriter {
 public:
  // Starts a family; samples of it follow. `type`: counter, gauge, histogram.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  void histogram(std::string_view name, const Labels& labels,
                 const BucketHistogram::Snapshot& snapshot);

  const std::string& text() const { return out_; }

 private:
  void write_labels(const Labels& labels, const std::pair<std::string, std::string>* extra);
  std::string out_;
};

}  // namespace dancemoe::http
