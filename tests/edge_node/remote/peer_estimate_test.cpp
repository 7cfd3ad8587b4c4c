#include "edge_node/remote/peer_estimate.h"

#include <doctest/doctest.h>

namespace dancemoe::node {

TEST_CASE("peer estimate: back-off doubles per failure up to 8 s and ends at the first success") {
  using namespace std::chrono_literals;
  PeerEstimate e;
  const PeerEstimate::Clock::time_point t0{};  // a fake clock
  CHECK_FALSE(e.in_backoff(t0));
  e.on_failure(t0);
  CHECK(e.in_backoff(t0 + 249ms));
  CHECK_FALSE(e.in_backoff(t0 + 250ms));
  e.on_failure(t0);
  CHECK(e.in_backoff(t0 + 499ms));
  CHECK_FALSE(e.in_backoff(t0 + 500ms));
  for (int i = 0; i < 10; ++i) e.on_failure(t0);
  CHECK(e.in_backoff(t0 + 7999ms));
  CHECK_FALSE(e.in_backoff(t0 + 8000ms));
  CHECK(e.consecutive_failures() == 12);
  e.on_success(300, 1000, 2, 100);
  CHECK(e.consecutive_failures() == 0);
  CHECK_FALSE(e.in_backoff(t0));
}

TEST_CASE("peer estimate: converges to the measured overhead, compute and bandwidth") {
  PeerEstimate e;
  // Calls of 8 pairs computing 800 us, 1 MB both ways over 1 ms of wire, 200 us overhead.
  for (int i = 0; i < 60; ++i) e.on_success(200 + 800 + 1000, 1'000'000, 8, 800);
  CHECK(e.us_per_pair() == doctest::Approx(100).epsilon(0.02));
  CHECK(e.overhead_us() + e.us_per_byte() * 1e6 == doctest::Approx(1200).epsilon(0.05));
  // Small calls pin the overhead.
  for (int i = 0; i < 60; ++i) e.on_success(250 + 100, 512, 1, 100);
  CHECK(e.overhead_us() == doctest::Approx(250).epsilon(0.1));
  CHECK(e.expected_us(512, 1) == doctest::Approx(350).epsilon(0.1));
}

}  // namespace dancemoe::node
