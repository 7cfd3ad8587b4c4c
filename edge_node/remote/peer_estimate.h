// PeerEstimate: what this node has measured about one peer's expert
// service, for choosing replicas by expected completion time (DESIGN.md
// §3): a fixed per-call overhead (round trip minus compute and transfer),
// transfer time per byte, compute time per (token, expert) pair, calls in
// flight -- and whether the peer is in back-off after failing.
//
// Estimates are exponentially weighted moving averages seeded with a
// loopback-like prior, so an unmeasured peer is neither shunned nor
// preferred; the per-byte estimate averages its first samples evenly (the
// prior weighs as one sample), so a slow link shows after a call or two. Back-off doubles per
// consecutive failure (from 250 ms up to 8 s) and ends at the first success. Time is passed in, so
// tests use a fake clock. A value: not thread-safe (the executor's thread owns them).
#pragma once

#include <chrono>
#include <cstdint>

namespace dancemoe::node {

class PeerEstimate {
 public:
  using Clock = std::chrono::steady_clock;

  // Expected microseconds for a call carrying `bytes` (both ways) and
  // `n_pairs` (token, expert) pairs, behind the calls already in flight.
  double expected_us(uint64_t bytes, uint64_t n_pairs) const;

  // A completed call: its round trip, bytes both ways, pairs, and the
  // compute time the peer reported.
  void on_success(double round_trip_us, uint64_t bytes, uint64_t n_pairs, double compute_us);
  void on_failure(Clock::time_point now);
  bool in_backoff(Clock::time_point now) const { return now < backoff_until_; }
  int consecutive_failures() const { return consecutive_failures_; }

  int in_flight = 0;

  double overhead_us() const { return overhead_us_; }
  double us_per_byte() const { return us_per_byte_; }
  double us_per_pair() const { return us_per_pair_; }
  // Calls large enough to measure the bandwidth so far.
  int bandwidth_samples() const { return bandwidth_samples_; }

 private:
  static constexpr double kAlpha = 0.2;
  double overhead_us_ = 150.0;  // prior: a loopback round trip
  double us_per_byte_ = 0.001;  // prior: 1 GB/s
  double us_per_pair_ = 200.0;  // prior: a small expert on one core
  int consecutive_failures_ = 0;
  int bandwidth_samples_ = 0;
  Clock::time_point backoff_until_{};
};

}  // namespace dancemoe::node
