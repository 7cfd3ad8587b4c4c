// ServiceInbox: jobs posted from other threads run on the loop's thread,
// bounded in number and in time, and fail cleanly once the loop is gone.
#include "scheduler/daemon/service_inbox.h"

#include <doctest/doctest.h>
#include <poll.h>

#include <atomic>
#include <thread>

#include "tests/scheduler/daemon/service_harness.h"

namespace dancemoe::scheduler::test {
namespace {

using nlohmann::ordered_json;
using std::chrono::milliseconds;

std::unique_ptr<ServiceInbox> new_inbox(size_t max_waiting = 64) {
  auto inbox = ServiceInbox::create(max_waiting);
  REQUIRE(inbox.is_ok());
  return std::move(*inbox);
}

// The loop's side, as ControlServer runs it: wait on the eventfd, run the jobs.
class InboxLoop {
 public:
  InboxLoop(ServiceInbox& inbox, SchedulerService& service)
      : thread_([this, &inbox, &service] {
          loop_thread_ = std::this_thread::get_id();
          while (!stop_.load()) {
            pollfd p{inbox.wake_fd(), POLLIN, 0};
            if (::poll(&p, 1, 10) > 0) inbox.run_waiting(service);
          }
          inbox.close();
        }) {}
  ~InboxLoop() {
    stop_ = true;
    thread_.join();
  }
  std::thread::id loop_thread() const { return loop_thread_; }

 private:
  std::atomic<bool> stop_{false};
  std::thread::id loop_thread_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("service inbox: a job runs on the loop's thread and its answer comes back") {
  Harness h;
  auto inbox = new_inbox();
  std::thread::id ran_on;
  {
    InboxLoop loop(*inbox, h.service());
    Result<ordered_json> r = inbox->call(
        [&ran_on](SchedulerService& s) -> Result<ordered_json> {
          ran_on = std::this_thread::get_id();
          return s.read_only_query("status", nlohmann::json::object());
        },
        milliseconds(5000));
    REQUIRE(r.is_ok());
    CHECK((*r)["model"]["id"] == "model-tiny");
    CHECK(ran_on == loop.loop_thread());
    CHECK(ran_on != std::this_thread::get_id());
    // Errors and exceptions of a job are its caller's answer, not the loop's end.
    Result<ordered_json> error = inbox->call(
        [](SchedulerService& s) { return s.read_only_query("round", nlohmann::json::object()); },
        milliseconds(5000));
    CHECK(error.status().code() == StatusCode::kInvalidArgument);
    CHECK(error.status().message().find("control port") != std::string::npos);
    Result<ordered_json> thrown = inbox->call(
        [](SchedulerService&) -> Result<ordered_json> { return ordered_json(1).at("x"); },
        milliseconds(5000));
    CHECK(thrown.status().code() == StatusCode::kInternal);
    CHECK(inbox
              ->call([](SchedulerService&) -> Result<ordered_json> { return ordered_json(2); },
                     milliseconds(5000))
              .is_ok());
  }
  // The loop has ended: nothing waits for it.
  CHECK(inbox
            ->call([](SchedulerService&) -> Result<ordered_json> { return ordered_json(); },
                   milliseconds(5000))
            .status()
            .code() == StatusCode::kUnavailable);
}

TEST_CASE(
    "service inbox: a busy loop is a deadline, a full inbox is refused, close fails waiters") {
  Harness h;
  auto inbox = new_inbox(/*max_waiting=*/2);
  // No loop runs: the caller gives up after its timeout.
  const auto start = std::chrono::steady_clock::now();
  Result<ordered_json> late = inbox->call(
      [](SchedulerService&) -> Result<ordered_json> { return ordered_json(1); }, milliseconds(50));
  CHECK(late.status().code() == StatusCode::kDeadlineExceeded);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  // The abandoned job is dropped when the loop comes round, not run.
  bool ran = false;
  (void)inbox->call(
      [&ran](SchedulerService&) -> Result<ordered_json> {
        ran = true;
        return ordered_json(1);
      },
      milliseconds(10));
  inbox->run_waiting(h.service());
  CHECK_FALSE(ran);

  // Two callers wait (nobody runs the loop); a third is refused at once.
  std::vector<std::thread> waiters;
  std::atomic<int> unavailable_answers{0};
  for (int i = 0; i < 2; ++i) {
    waiters.emplace_back([&] {
      Result<ordered_json> r =
          inbox->call([](SchedulerService&) -> Result<ordered_json> { return ordered_json(1); },
                      milliseconds(10000));
      if (r.status().code() == StatusCode::kUnavailable) ++unavailable_answers;
    });
  }
  for (int i = 0; i < 5000 && inbox->n_waiting() < 2; ++i)
    std::this_thread::sleep_for(milliseconds(1));
  REQUIRE(inbox->n_waiting() == 2);
  Result<ordered_json> third = inbox->call(
      [](SchedulerService&) -> Result<ordered_json> { return ordered_json(1); }, milliseconds(1));
  CHECK(third.status().code() == StatusCode::kResourceExhausted);
  inbox->close();  // the loop ends: both waiters hear it at once
  for (std::thread& t : waiters) t.join();
  CHECK(unavailable_answers.load() == 2);
}

}  // namespace dancemoe::scheduler::test
