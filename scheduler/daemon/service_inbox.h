// ServiceInbox: how another thread -- the HTTP endpoint (scheduler/http) --
// gets an answer computed on the service loop's thread, which alone may
// touch the SchedulerService and its store (control_server.h). A caller
// posts a job and waits; the loop is woken at once (an eventfd it polls
// beside the control socket), runs the waiting jobs between messages, and
// hands each answer back to its caller.
//
// Bounded: at most `max_waiting` jobs wait (more: resource_exhausted), and a
// caller waits at most its timeout (deadline_exceeded: a job not started by
// then is dropped; one already running finishes into a slot nobody reads,
// so a job owns what it uses -- capture by value). After close() (the loop
// ended) every waiting and every new job fails with unavailable.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "common/base/status.h"
#include "common/base/unique_fd.h"

namespace dancemoe::scheduler {

class SchedulerService;

class ServiceInbox {
 public:
  using Job = std::function<Result<nlohmann::ordered_json>(SchedulerService&)>;

  // unavailable when the process has no file descriptor left for its eventfd.
  static Result<std::unique_ptr<ServiceInbox>> create(size_t max_waiting = 64);
  ServiceInbox(const ServiceInbox&) = delete;
  ServiceInbox& operator=(const ServiceInbox&) = delete;

  // Any thread: runs `job` on the loop's thread and returns its answer.
  Result<nlohmann::ordered_json> call(Job job, std::chrono::milliseconds timeout);

  // Jobs posted and not yet taken by the loop.
  size_t n_waiting() const;

  // The loop's side: readable while jobs wait.
  int wake_fd() const { return event_.get(); }
  // Runs every waiting job (an exception from one becomes its internal error).
  void run_waiting(SchedulerService& service);
  // Fails waiting and future jobs; the loop calls it when it ends.
  void close();

 private:
  ServiceInbox(size_t max_waiting, UniqueFd event)
      : max_waiting_(max_waiting), event_(std::move(event)) {}
  struct Slot;
  struct Entry {
    Job job;
    std::shared_ptr<Slot> slot;
  };

  const size_t max_waiting_;
  UniqueFd event_;
  mutable std::mutex mutex_;
  std::deque<Entry> waiting_;  // guarded by mutex_
  bool closed_ = false;        // guarded by mutex_
};

}  // namespace dancemoe::scheduler
