#include "edge_node/remote/peer_estimate.h"

#include <algorithm>

namespace dancemoe::node {

double PeerEstimate::expected_us(uint64_t bytes, uint64_t n_pairs) const {
  const double one = overhead_us_ + us_per_byte_ * static_cast<double>(bytes) +
                     us_per_pair_ * static_cast<double>(n_pairs);
  // Calls already in flight on that peer are served first (one worker).
  return one + static_cast<double>(in_flight) * (overhead_us_ + us_per_pair_);
}

void PeerEstimate::on_success(double round_trip_us, uint64_t bytes, uint64_t n_pairs,
                              double compute_us) {
  consecutive_failures_ = 0;
  backoff_until_ = {};
  if (n_pairs > 0 && compute_us > 0) {
    us_per_pair_ += kAlpha * (compute_us / static_cast<double>(n_pairs) - us_per_pair_);
  }
  // What is left of the round trip is transfer plus fixed overhead; split by
  // the current per-byte estimate and keep both non-negative.
  const double network_us = std::max(0.0, round_trip_us - compute_us);
  const double transfer_us = std::min(network_us, us_per_byte_ * static_cast<double>(bytes));
  overhead_us_ += kAlpha * (network_us - transfer_us - overhead_us_);
  if (bytes >= (64u << 10) && network_us > overhead_us_) {
    // Only large calls say anything about bandwidth.
    const double per_byte = (network_us - overhead_us_) / static_cast<double>(bytes);
    ++bandwidth_samples_;
    const double alpha = std::max(kAlpha, 1.0 / (bandwidth_samples_ + 1));
    us_per_byte_ += alpha * (std::max(per_byte, 1e-6) - us_per_byte_);
  }
  overhead_us_ = std::max(overhead_us_, 1.0);
}

void PeerEstimate::on_failure(Clock::time_point now) {
  ++consecutive_failures_;
  const int shift = std::min(consecutive_failures_ - 1, 5);
  backoff_until_ = now + std::chrono::milliseconds(250) * (1 << shift);
}

}  // namespace dancemoe::node
