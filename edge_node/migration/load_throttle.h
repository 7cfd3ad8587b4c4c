// LoadThrottle: how fast a migration may load experts while the node serves
// (DESIGN.md §5.6: "throttled so serving latency is not hurt more than the
// configured bound").
//
// Two limits. A byte rate (0: none). And a latency bound: the engine reports
// each decoded token's latency, split by whether a migration was loading at
// the time; while requests are in flight the loader works only a `duty`
// fraction of the time (pausing load_time * (1 - duty) / duty after each
// expert), and an additive-increase / multiplicative-decrease controller
// moves the duty: halved whenever the latency during loading exceeds the
// latency without loading by more than the bound, raised by 0.1 otherwise.
// With no request in flight only the byte rate applies.
//
// Thread-safe (the engine observes, the loader asks). Time is passed in.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace dancemoe::node {

struct ThrottleOptions {
  double max_bytes_per_s = 0;   // 0: unlimited
  double latency_bound = 0.25;  // allowed relative increase of per-token latency
  double initial_duty = 0.5;
  double min_duty = 0.05;
};

class LoadThrottle {
 public:
  using Duration = std::chrono::steady_clock::duration;

  explicit LoadThrottle(ThrottleOptions options);

  void observe_token_latency(double latency_us, bool loading);
  // After one expert of `bytes` took `load_time` to load: the pause before the next.
  Duration pause_after(uint64_t bytes, Duration load_time, bool serving);

  double duty() const;
  double baseline_us() const;
  double loading_us() const;

 private:
  static constexpr double kAlpha = 0.2;
  ThrottleOptions options_;
  mutable std::mutex mutex_;
  double duty_;
  double baseline_us_ = 0;  // EWMA, 0 = not measured
  double loading_us_ = 0;
  bool fresh_loading_sample_ = false;
};

}  // namespace dancemoe::node
