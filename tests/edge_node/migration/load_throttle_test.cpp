#include "edge_node/migration/load_throttle.h"

#include <doctest/doctest.h>

namespace dancemoe::node {
namespace {

using namespace std::chrono_literals;
using Duration = LoadThrottle::Duration;

}  // namespace

TEST_CASE("load throttle: idle node loads flat out unless a byte rate is set") {
  LoadThrottle free({.max_bytes_per_s = 0});
  CHECK(free.pause_after(1 << 20, 10ms, /*serving=*/false) == Duration::zero());
  LoadThrottle capped({.max_bytes_per_s = 100e6});
  // 10 MB at 100 MB/s takes 100 ms: after 20 ms of loading, pause 80 ms.
  CHECK(capped.pause_after(10'000'000, 20ms, false) == Duration(80ms));
  CHECK(capped.pause_after(10'000'000, 200ms, false) == Duration::zero());
}

TEST_CASE("load throttle: while serving, the duty halves when latency exceeds the bound") {
  LoadThrottle t({.latency_bound = 0.25, .initial_duty = 0.5});
  for (int i = 0; i < 20; ++i) t.observe_token_latency(1000, /*loading=*/false);
  // Within the bound: the duty grows by 0.1 per expert.
  t.observe_token_latency(1200, true);
  CHECK(t.pause_after(0, 10ms, true) == std::chrono::duration_cast<Duration>(10ms * (0.4 / 0.6)));
  CHECK(t.duty() == doctest::Approx(0.6));
  // Beyond it (2000 us EWMA > 1250): halved, and the pause grows.
  for (int i = 0; i < 20; ++i) t.observe_token_latency(2000, true);
  const Duration pause = t.pause_after(0, 10ms, true);
  CHECK(t.duty() == doctest::Approx(0.3));
  CHECK(pause == std::chrono::duration_cast<Duration>(10ms * (0.7 / 0.3)));
  // No fresh sample: the duty stays.
  t.pause_after(0, 10ms, true);
  CHECK(t.duty() == doctest::Approx(0.3));
  // Never below the minimum.
  for (int i = 0; i < 10; ++i) {
    t.observe_token_latency(5000, true);
    t.pause_after(0, 10ms, true);
  }
  CHECK(t.duty() == doctest::Approx(0.05));
}

}  // namespace dancemoe::node
