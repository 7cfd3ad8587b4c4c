// RequestQueue: fair admission of generation requests to the node's
// generation engine, which runs up to `max_running` sequences together
// (continuous batching: edge_node/agent/batch_scheduler.h; 1 where the
// engine runs one at a time). Requests take a Ticket when they arrive;
// tickets start strictly in arrival order (FIFO), at most `max_running` at
// once. At most `max_waiting` tickets may wait behind the running ones:
// beyond that enqueue() answers resource_exhausted at once (HTTP 429)
// instead of letting requests pile up. A waiting request whose client went
// away leaves the queue (wait_turn's `cancelled`), so it never blocks those
// behind it.
//
// Thread-safe. Tickets are RAII: destroying one (running or waiting) frees
// its place. The queue must outlive its tickets.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "common/base/status.h"

namespace dancemoe::node {

class RequestQueue {
 public:
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

    // Blocks until this ticket is the running one (ok), or until
    // `cancelled()` -- polled every `poll` -- returns true (cancelled: the
    // ticket leaves the queue). `cancelled` may be empty.
    Status wait_turn(const std::function<bool()>& cancelled,
                     std::chrono::milliseconds poll = std::chrono::milliseconds(20));

   private:
    friend class RequestQueue;
    Ticket(RequestQueue& queue, uint64_t number) : queue_(queue), number_(number) {}
    RequestQueue& queue_;
    uint64_t number_;
    bool running_ = false;  // passed wait_turn (guarded by the queue's mutex)
  };

  explicit RequestQueue(size_t max_waiting, size_t max_running = 1)
      : max_waiting_(max_waiting), max_running_(std::max<size_t>(max_running, 1)) {}

  // A ticket at the back of the queue, or resource_exhausted when
  // `max_waiting` requests already wait.
  Result<std::unique_ptr<Ticket>> enqueue();

  size_t n_waiting() const;  // not yet running
  bool running() const;      // at least one runs
  size_t n_running() const;
  uint64_t n_rejected() const;
  size_t max_waiting() const { return max_waiting_; }

 private:
  void leave(uint64_t number, bool was_running);
  bool is_turn_locked(uint64_t number) const;

  const size_t max_waiting_;
  const size_t max_running_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<uint64_t> order_;  // tickets in arrival order; the first max_running_ may run
  size_t n_running_ = 0;        // tickets that passed wait_turn
  uint64_t next_number_ = 0;
  uint64_t n_rejected_ = 0;
};

}  // namespace dancemoe::node
