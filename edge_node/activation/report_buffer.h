// ReportBuffer: activation reports not yet acknowledged by the scheduler,
// oldest first, bounded. While the scheduler is unreachable reports pile up
// here and are resent, with their original sequence numbers (the scheduler
// stores a report once per sequence), when it answers again. When the bound
// is reached the oldest report is dropped and counted: losing old
// statistics is better than unbounded memory on a node that outlives its
// scheduler for days.
//
// Not thread-safe (owned by the scheduler link's thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <vector>

#include "common/proto/messages.h"

namespace dancemoe::node {

class ReportBuffer {
 public:
  // Steady milliseconds, as read from a Clock (common/runtime/clock.h).
  using Millis = std::chrono::milliseconds;

  explicit ReportBuffer(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  void push(uint64_t sequence, proto::ActivationReport report);
  // Removes the report with this sequence; false when none is pending.
  bool ack(uint64_t sequence);

  // Reports due for (re)sending at `now`: never sent, or last sent at least
  // `resend_after` ago. Marks them sent at `now`.
  std::vector<std::pair<uint64_t, proto::ActivationReport>> due(Millis now, Millis resend_after);
  // Makes every pending report due (after re-registering with the scheduler).
  void mark_all_unsent();

  size_t size() const { return entries_.size(); }
  uint64_t dropped() const { return dropped_; }

 private:
  struct Entry {
    uint64_t sequence;
    proto::ActivationReport report;
    bool sent = false;
    Millis sent_at{0};
  };
  size_t capacity_;
  std::deque<Entry> entries_;
  uint64_t dropped_ = 0;
};

}  // namespace dancemoe::node
