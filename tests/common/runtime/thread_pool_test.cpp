#include "common/runtime/thread_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <vector>

namespace dancemoe {

TEST_CASE("thread pool: runs the function once on every thread") {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> calls(3);
  for (int round = 0; round < 1000; ++round) {
    pool.run([&](int idx, int n) {
      CHECK(n == 3);
      calls[static_cast<size_t>(idx)].fetch_add(1);
    });
  }
  for (auto& c : calls) CHECK(c.load() == 1000);
}

// Regression: a worker scheduled after the first run() bumped the generation
// used to take that value as its baseline, skip the job, and hang run().
TEST_CASE("thread pool: a run right after construction does not wait for late workers") {
  for (int i = 0; i < 200; ++i) {
    ThreadPool pool(2);
    std::atomic<int> sum{0};
    pool.run([&](int idx, int) { sum.fetch_add(idx + 1); });
    CHECK(sum.load() == 3);
  }
}

TEST_CASE("thread pool: a pool of one runs on the caller") {
  ThreadPool pool(1);
  int seen = -1;
  pool.run([&](int idx, int n) { seen = idx * 10 + n; });
  CHECK(seen == 1);
}

TEST_CASE("split_range: covers 0..n without overlap with aligned boundaries") {
  for (int64_t n : {0, 1, 15, 16, 17, 100, 1024, 1025}) {
    for (int threads : {1, 2, 3, 7}) {
      int64_t expected_begin = 0;
      for (int idx = 0; idx < threads; ++idx) {
        Range r = split_range(n, idx, threads, 16);
        CHECK(r.begin == expected_begin);
        CHECK(r.end >= r.begin);
        if (r.end < n) CHECK(r.end % 16 == 0);
        expected_begin = r.end;
      }
      CHECK(expected_begin == n);
    }
  }
}

}  // namespace dancemoe
