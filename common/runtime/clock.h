// The environment seam for time (STYLE.md: leveldb's Env). Everything
// time-dependent -- in the scheduler heartbeat expiry, the placement period,
// the prepare timeout, cold-start settling; in the node its scheduler link,
// report windows and migration throttle -- reads a Clock, so unit tests drive
// it with FakeClock instead of sleeping.
//
// Two readings: wall_ms() (unix milliseconds) for what is stored and shown,
// steady_ms() (monotonic) for deadlines, so a wall-clock step (NTP) never
// expires every node at once.
//
// SystemClock is stateless; FakeClock's readings are atomic, so a test may
// advance it while a component's own thread reads it. Both thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace dancemoe {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t wall_ms() const = 0;
  virtual int64_t steady_ms() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t wall_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t steady_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// The process's SystemClock, for components given no other.
inline const Clock& system_clock() {
  static const SystemClock clock;
  return clock;
}

// Starts at a fixed wall time; advance() moves both readings together.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t wall_start_ms = 1'700'000'000'000) : wall_(wall_start_ms) {}
  int64_t wall_ms() const override { return wall_.load(); }
  int64_t steady_ms() const override { return steady_.load(); }
  void advance_ms(int64_t ms) {
    wall_ += ms;
    steady_ += ms;
  }
  void advance_s(double s) { advance_ms(static_cast<int64_t>(s * 1000.0)); }

 private:
  std::atomic<int64_t> wall_;
  std::atomic<int64_t> steady_{1'000'000};
};

}  // namespace dancemoe
