#include "edge_node/migration/load_throttle.h"

#include <algorithm>

namespace dancemoe::node {

LoadThrottle::LoadThrottle(ThrottleOptions options)
    : options_(options), duty_(std::clamp(options.initial_duty, options.min_duty, 1.0)) {}

void LoadThrottle::observe_token_latency(double latency_us, bool loading) {
  std::lock_guard<std::mutex> lock(mutex_);
  double& ewma = loading ? loading_us_ : baseline_us_;
  ewma = ewma == 0 ? latency_us : ewma + kAlpha * (latency_us - ewma);
  if (loading) fresh_loading_sample_ = true;
}

LoadThrottle::Duration LoadThrottle::pause_after(uint64_t bytes, Duration load_time, bool serving) {
  std::lock_guard<std::mutex> lock(mutex_);
  Duration pause = Duration::zero();
  if (serving) {
    if (fresh_loading_sample_ && baseline_us_ > 0) {
      if (loading_us_ > baseline_us_ * (1.0 + options_.latency_bound)) {
        duty_ = std::max(options_.min_duty, duty_ * 0.5);
      } else {
        duty_ = std::min(1.0, duty_ + 0.1);
      }
      fresh_loading_sample_ = false;
    }
    pause = std::chrono::duration_cast<Duration>(load_time * ((1.0 - duty_) / duty_));
  }
  if (options_.max_bytes_per_s > 0) {
    const auto at_rate = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double>(static_cast<double>(bytes) / options_.max_bytes_per_s));
    pause = std::max(pause, at_rate - load_time);
  }
  return std::max(pause, Duration::zero());
}

double LoadThrottle::duty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return duty_;
}
double LoadThrottle::baseline_us() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return baseline_us_;
}
double LoadThrottle::loading_us() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return loading_us_;
}

}  // namespace dancemoe::node
