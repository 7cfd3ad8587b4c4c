#include "edge_node/http/request_queue.h"

#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace dancemoe::node {

TEST_CASE("request queue: tickets run one at a time in arrival order") {
  RequestQueue queue(8);
  auto first = queue.enqueue();
  REQUIRE(first.is_ok());
  REQUIRE((*first)->wait_turn({}).is_ok());
  CHECK(queue.running());

  // Five waiters enqueued in a known order; each records when it ran.
  std::vector<std::unique_ptr<RequestQueue::Ticket>> tickets;
  for (int i = 0; i < 5; ++i) {
    auto t = queue.enqueue();
    REQUIRE(t.is_ok());
    tickets.push_back(std::move(*t));
  }
  CHECK(queue.n_waiting() == 5);
  std::mutex mutex;
  std::vector<int> order;
  std::vector<std::thread> threads;
  // Start the threads in reverse so that arrival order, not thread start, decides.
  for (int i = 4; i >= 0; --i) {
    threads.emplace_back([&, i] {
      REQUIRE(tickets[static_cast<size_t>(i)]->wait_turn({}).is_ok());
      {
        std::lock_guard<std::mutex> lock(mutex);
        order.push_back(i);
      }
      tickets[static_cast<size_t>(i)].reset();
    });
  }
  first->reset();
  for (auto& t : threads) t.join();
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(queue.n_waiting() == 0);
  CHECK_FALSE(queue.running());
}

TEST_CASE("request queue: beyond max waiting, enqueue is resource_exhausted") {
  RequestQueue queue(1);
  auto running = queue.enqueue();
  REQUIRE(running.is_ok());
  REQUIRE((*running)->wait_turn({}).is_ok());
  auto waiting = queue.enqueue();
  REQUIRE(waiting.is_ok());
  auto refused = queue.enqueue();
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  CHECK(refused.status().message().find("--max-queued 1") != std::string::npos);
  CHECK(queue.n_rejected() == 1);
  waiting->reset();  // a waiter leaving makes room
  CHECK(queue.enqueue().is_ok());
}

TEST_CASE("request queue: max waiting 0 still admits one request on an idle node") {
  RequestQueue queue(0);
  auto only = queue.enqueue();
  REQUIRE(only.is_ok());
  CHECK_FALSE(queue.enqueue().is_ok());
  only->reset();
  CHECK(queue.enqueue().is_ok());
}

TEST_CASE("request queue: a cancelled waiter leaves and does not block the next") {
  RequestQueue queue(4);
  auto running = queue.enqueue();
  REQUIRE(running.is_ok());
  REQUIRE((*running)->wait_turn({}).is_ok());
  auto gone = queue.enqueue();
  auto next = queue.enqueue();
  REQUIRE(gone.is_ok());
  REQUIRE(next.is_ok());
  std::atomic<bool> client_left{false};
  std::thread waiter([&] {
    const Status s =
        (*gone)->wait_turn([&] { return client_left.load(); }, std::chrono::milliseconds(5));
    CHECK_FALSE(s.is_ok());
    gone->reset();
  });
  client_left = true;
  waiter.join();
  running->reset();
  CHECK((*next)->wait_turn({}, std::chrono::milliseconds(5)).is_ok());
}

TEST_CASE("request queue: with max running 3, three tickets run together and the fourth waits") {
  RequestQueue queue(1, 3);
  std::vector<std::unique_ptr<RequestQueue::Ticket>> running;
  for (int i = 0; i < 3; ++i) {
    auto t = queue.enqueue();
    REQUIRE(t.is_ok());
    REQUIRE((*t)->wait_turn({}).is_ok());
    running.push_back(std::move(*t));
  }
  CHECK(queue.n_running() == 3);
  CHECK(queue.n_waiting() == 0);
  auto fourth = queue.enqueue();
  REQUIRE(fourth.is_ok());
  CHECK(queue.n_waiting() == 1);
  // Its turn does not come while three run...
  int polls = 0;
  CHECK_FALSE(
      (*fourth)->wait_turn([&] { return ++polls >= 3; }, std::chrono::milliseconds(5)).is_ok());
  fourth->reset();  // its handler gave up and dropped the ticket
  auto again = queue.enqueue();
  REQUIRE(again.is_ok());
  auto refused = queue.enqueue();  // one waits already: --max-queued 1
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  // ... and comes when one of them leaves.
  running[1].reset();
  CHECK((*again)->wait_turn({}).is_ok());
  CHECK(queue.n_running() == 3);
}

}  // namespace dancemoe::node
