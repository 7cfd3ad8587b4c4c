// LatencyHistogram: call latencies in microseconds, bucketed on a log scale
// (8 buckets per doubling, ~9 % wide) from 1 us to ~70 minutes, so a report
// window's mean and p99 cost a fixed 256 counters whatever the call rate.
// A value: not thread-safe (ActivationLog guards it).
#pragma once

#include <array>
#include <cstdint>

namespace dancemoe::node {

class LatencyHistogram {
 public:
  void add(double us);
  void merge(const LatencyHistogram& other);
  void clear() { *this = LatencyHistogram(); }

  uint64_t count() const { return count_; }
  double mean_us() const { return count_ ? sum_us_ / static_cast<double>(count_) : 0.0; }
  // The upper edge of the bucket holding quantile q in (0, 1]; 0 when empty.
  double quantile_us(double q) const;
  double sum_us() const { return sum_us_; }
  // Calls in buckets whose upper edge is <= `us` (a Prometheus `le` bucket,
  // exact at the bucket edges, ~9 % coarse elsewhere).
  uint64_t count_at_most_us(double us) const;

 private:
  static constexpr int kBucketsPerDoubling = 8;
  static constexpr int kBuckets = 256;
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  double sum_us_ = 0.0;
};

}  // namespace dancemoe::node
