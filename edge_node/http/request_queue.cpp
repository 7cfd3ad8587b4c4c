#include "edge_node/http/request_queue.h"

#include <algorithm>
#include <string>

namespace dancemoe::node {

Result<std::unique_ptr<RequestQueue::Ticket>> RequestQueue::enqueue() {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t waiting = order_.size() - (running_ ? 1 : 0);
  // The first request on an idle node never counts as waiting.
  const bool idle = order_.empty();
  if (!idle && waiting >= max_waiting_) {
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
  return !order_.empty() && order_.front() == number;
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
  q.running_ = true;
  return Status::ok();
}

RequestQueue::Ticket::~Ticket() { queue_.leave(number_); }

void RequestQueue::leave(uint64_t number) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find(order_.begin(), order_.end(), number);
    if (it == order_.end()) return;
    if (it == order_.begin()) running_ = false;
    order_.erase(it);
  }
  changed_.notify_all();
}

size_t RequestQueue::n_waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return order_.size() - (running_ ? 1 : 0);
}

bool RequestQueue::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

uint64_t RequestQueue::n_rejected() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return n_rejected_;
}

}  // namespace dancemoe::node
