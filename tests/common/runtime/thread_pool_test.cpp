#include "common/runtime/thread_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace dancemoe {

TEST_CASE("thread pool: every chunk runs exactly once") {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> calls(50);
  for (int round = 0; round < 500; ++round) {
    pool.parallel_for(50, [&](int64_t chunk, int thread_idx) {
      CHECK(thread_idx >= 0);
      CHECK(thread_idx < 3);
      calls[static_cast<size_t>(chunk)].fetch_add(1);
    });
  }
  for (auto& c : calls) CHECK(c.load() == 500);
}

// Regression: a worker scheduled after the first call published its job
// used to take that generation as its baseline, skip the job, and hang.
TEST_CASE("thread pool: a call right after construction does not wait for late workers") {
  for (int i = 0; i < 200; ++i) {
    ThreadPool pool(2);
    std::atomic<int> sum{0};
    pool.parallel_for(2, [&](int64_t chunk, int) { sum.fetch_add(static_cast<int>(chunk) + 1); });
    CHECK(sum.load() == 3);
  }
}

// Regression: a late worker once read the next job's (larger) chunk count
// before the claim counter moved on, claimed a phantom chunk and made the
// owner wait forever for a count it could no longer reach. Varying chunk
// counts back to back is what triggered it.
TEST_CASE("thread pool: back-to-back jobs of varying size never over- or under-count") {
  ThreadPool pool(2);
  int64_t expected = 0;
  std::atomic<int64_t> total{0};
  for (int64_t round = 0; round < 300000; ++round) {
    const int64_t n = 1 + (round * 7919) % 37;
    expected += n;
    pool.parallel_for(n, [&](int64_t, int) { total.fetch_add(1, std::memory_order_relaxed); });
  }
  CHECK(total.load() == expected);
}

TEST_CASE("thread pool: more chunks than one job can carry are all run") {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> calls(70000);
  pool.parallel_for(70000,
                    [&](int64_t chunk, int) { calls[static_cast<size_t>(chunk)].fetch_add(1); });
  int wrong = 0;
  for (auto& c : calls) wrong += c.load() != 1;
  CHECK(wrong == 0);
}

TEST_CASE("thread pool: a stalled thread's share is taken by the others") {
  // Chunk 0 blocks its thread for a while; the remaining chunks must not
  // wait for it (they are claimed dynamically), so they finish first.
  ThreadPool pool(2);
  std::atomic<int> finished_while_blocked{0};
  std::atomic<bool> blocked{true};
  pool.parallel_for(20, [&](int64_t chunk, int) {
    if (chunk == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      blocked.store(false);
    } else if (blocked.load()) {
      finished_while_blocked.fetch_add(1);
    }
  });
  CHECK(finished_while_blocked.load() == 19);
}

TEST_CASE("thread pool: a pool of one runs on the caller") {
  ThreadPool pool(1);
  int calls = 0;
  pool.parallel_for(4, [&](int64_t, int thread_idx) {
    CHECK(thread_idx == 0);
    ++calls;
  });
  CHECK(calls == 4);
}

TEST_CASE("split_range: covers 0..n without overlap with aligned boundaries") {
  for (int64_t n : {0, 1, 15, 16, 17, 100, 1024, 1025}) {
    for (int parts : {1, 2, 3, 7}) {
      int64_t expected_begin = 0;
      for (int idx = 0; idx < parts; ++idx) {
        Range r = split_range(n, idx, parts, 16);
        CHECK(r.begin == expected_begin);
        CHECK(r.end >= r.begin);
        if (r.end < n) CHECK(r.end % 16 == 0);
        expected_begin = r.end;
      }
      CHECK(expected_begin == n);
    }
  }
}

TEST_CASE("chunk_count: about the requested size, at least two per thread, at most n") {
  CHECK(chunk_count(1024, 64, 2) == 16);
  CHECK(chunk_count(100, 64, 2) == 4);
  CHECK(chunk_count(3, 64, 2) == 3);
  CHECK(chunk_count(0, 64, 2) == 0);
}

}  // namespace dancemoe
