#include "scheduler/daemon/service_inbox.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>

namespace dancemoe::scheduler {

struct ServiceInbox::Slot {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;       // guarded by mutex
  bool abandoned = false;  // guarded by mutex: the caller stopped waiting
  Result<nlohmann::ordered_json> result = internal_error("no answer");

  void finish(Result<nlohmann::ordered_json> r) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      result = std::move(r);
      done = true;
    }
    done_cv.notify_all();
  }
};

Result<std::unique_ptr<ServiceInbox>> ServiceInbox::create(size_t max_waiting) {
  UniqueFd event(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!event.valid()) {
    return unavailable(std::string("cannot create the service loop's eventfd: ") +
                       std::strerror(errno));
  }
  return std::unique_ptr<ServiceInbox>(new ServiceInbox(max_waiting, std::move(event)));
}

Result<nlohmann::ordered_json> ServiceInbox::call(Job job, std::chrono::milliseconds timeout) {
  auto slot = std::make_shared<Slot>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return unavailable("the scheduler's service loop has stopped");
    if (waiting_.size() >= max_waiting_) {
      return resource_exhausted("the scheduler has " + std::to_string(waiting_.size()) +
                                " requests waiting for its service loop; try again");
    }
    waiting_.push_back({std::move(job), slot});
  }
  const uint64_t one = 1;
  // EAGAIN only when the counter is near 2^64: the loop is awake anyway.
  (void)!::write(event_.get(), &one, sizeof one);
  std::unique_lock<std::mutex> lock(slot->mutex);
  if (!slot->done_cv.wait_for(lock, timeout, [&] { return slot->done; })) {
    slot->abandoned = true;
    return deadline_exceeded("the scheduler's service loop did not answer within " +
                             std::to_string(timeout.count()) +
                             " ms (busy with a placement round?)");
  }
  return std::move(slot->result);
}

size_t ServiceInbox::n_waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_.size();
}

void ServiceInbox::run_waiting(SchedulerService& service) {
  uint64_t count = 0;
  (void)!::read(event_.get(), &count, sizeof count);  // EAGAIN: nothing was signalled
  std::deque<Entry> jobs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs.swap(waiting_);
  }
  for (Entry& e : jobs) {
    {
      std::lock_guard<std::mutex> lock(e.slot->mutex);
      if (e.slot->abandoned) continue;
    }
    Result<nlohmann::ordered_json> result = internal_error("no answer");
    try {
      result = e.job(service);
    } catch (const std::exception& ex) {
      result = internal_error(std::string("answering a request failed: ") + ex.what());
    }
    e.slot->finish(std::move(result));
  }
}

void ServiceInbox::close() {
  std::deque<Entry> jobs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    jobs.swap(waiting_);
  }
  for (Entry& e : jobs) e.slot->finish(unavailable("the scheduler's service loop has stopped"));
}

}  // namespace dancemoe::scheduler
