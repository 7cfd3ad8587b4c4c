#include "edge_node/http/request_queue.h"

#include <algorithm>
#include <string>

namespace dancemoe::node {

Result<std::unique_ptr<RequestQueue::Ticket>> RequestQueue::enqueue() {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t waiting = order_.size() - n_running_;
  // A request that may start at once never counts as waiting.
  const bool room = order_.size() < max_running_;
  if (!room && waiting >= max_waiting_) {
    ++n_rejected_;
    return resource_exhausted("the node is busy: " + std::to_string(waiting) +
                              " requests already wait for the generation engine (--max-queued " +
                              std::to_string(max_waiting_) + "); retry later");
  }
  const uint64_t number = next_number_++;
  order_.push_back(number);
  return std::unique_ptr<Ticket>(new Ticket(*this, number));
}

bool RequestQueue::is_turn_locked(uint64_t number) const {
  const size_t n = std::min(order_.size(), max_running_);
  return std::find(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n), number) !=
         order_.begin() + static_cast<std::ptrdiff_t>(n);
}

Status RequestQueue::Ticket::wait_turn(const std::function<bool()>& cancelled,
                                       std::chrono::milliseconds poll) {
  RequestQueue& q = queue_;
  std::unique_lock<std::mutex> lock(q.mutex_);
  while (!q.is_turn_locked(number_)) {
    q.changed_.wait_for(lock, poll);
    if (q.is_turn_locked(number_)) break;
    if (cancelled) {
      // The callback may be slow (a syscall): not under the lock.
      lock.unlock();
      const bool gone = cancelled();
      lock.lock();
      if (gone && !q.is_turn_locked(number_)) {
        return unavailable("cancelled while waiting in the request queue");
      }
    }
  }
  if (!running_) {
    running_ = true;
    ++q.n_running_;
  }
  return Status::ok();
}

RequestQueue::Ticket::~Ticket() {
  bool was_running = false;
  {
    std::lock_guard<std::mutex> lock(queue_.mutex_);
    was_running = running_;
  }
  queue_.leave(number_, was_running);
}

void RequestQueue::leave(uint64_t number, bool was_running) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find(order_.begin(), order_.end(), number);
    if (it == order_.end()) return;
    if (was_running) --n_running_;
    order_.erase(it);
  }
  changed_.notify_all();
}

size_t RequestQueue::n_waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_.size() - n_running_;
}

bool RequestQueue::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return n_running_ > 0;
}

size_t RequestQueue::n_running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return n_running_;
}

uint64_t RequestQueue::n_rejected() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return n_rejected_;
}

}  // namespace dancemoe::node
