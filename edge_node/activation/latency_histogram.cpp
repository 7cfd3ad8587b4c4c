#include "edge_node/activation/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace dancemoe::node {

void LatencyHistogram::add(double us) {
  if (!(us >= 0)) us = 0;  // NaN and negatives (clock oddities) count as 0
  int b = us <= 1.0 ? 0 : static_cast<int>(std::ceil(std::log2(us) * kBucketsPerDoubling));
  b = std::clamp(b, 0, kBuckets - 1);
  ++buckets_[static_cast<size_t>(b)];
  ++count_;
  sum_us_ += us;
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_us_ += other.sum_us_;
}

double LatencyHistogram::quantile_us(double q) const {
  if (count_ == 0) return 0.0;
  const double target = std::clamp(q, 0.0, 1.0) * static_cast<double>(count_);
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += buckets_[static_cast<size_t>(b)];
    if (static_cast<double>(seen) >= target && seen > 0) {
      return std::exp2(static_cast<double>(b) / kBucketsPerDoubling);
    }
  }
  return std::exp2(static_cast<double>(kBuckets - 1) / kBucketsPerDoubling);
}

uint64_t LatencyHistogram::count_at_most_us(double us) const {
  uint64_t n = 0;
  for (int b = 0; b < kBuckets; ++b) {
    // The tiny slack keeps an exact power-of-two bound inside its bucket.
    if (std::exp2(static_cast<double>(b) / kBucketsPerDoubling) > us * (1 + 1e-9)) break;
    n += buckets_[static_cast<size_t>(b)];
  }
  return n;
}

}  // namespace dancemoe::node
