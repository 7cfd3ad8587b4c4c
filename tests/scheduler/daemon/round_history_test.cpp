// A round reads the retained history's latencies only when a node's window
// has none (SchedulerService::gather_problem skips that scan otherwise);
// when it is needed, it must still be read.
#include <doctest/doctest.h>

#include "scheduler/daemon/service.h"
#include "tests/scheduler/daemon/service_harness.h"

namespace dancemoe::scheduler::test {
namespace {

// Registers a and b, stores one report of a before the cold start (with
// remote calls 10 ms slower than local ones when `history_latency`), commits
// the cold start, then stores a window report of a without remote calls and
// runs a round. Returns the round's C(P).
double cost_after_window_without_remote(bool history_latency) {
  Harness h;
  h.register_node("a", 16000);
  h.register_node("b", 16000);
  proto::ActivationReport history = report_of(1000, {{0, 1}, {2, 3}, {3, 5}}, 50);
  if (history_latency) history.remote.push_back({"b", 100, 10'100.0, 12'000.0, 1000, 0});
  h.send("a", history);
  auto out = h.heartbeat_and_advance({"a", "b"}, 2100);
  h.answer_ready(out);
  REQUIRE(h.service().committed_version() == 1);

  h.clock().advance_ms(1000);
  const std::vector<ExpertRef> all = {{0, 0}, {0, 1}, {2, 2}, {2, 3}, {3, 4}, {3, 5}};
  h.send("a", report_of(1000, all, 100, /*window_start_ms=*/10'000));  // local calls only
  h.heartbeat_and_advance({"a", "b"}, 2000);
  auto d = h.query("round");
  REQUIRE(d.is_ok());
  INFO(d->dump());
  return (*d)["cost_current_s"].get<double>();
}

}  // namespace

TEST_CASE("service: a round uses history latencies when the window measured none") {
  // delta(a) = 10 ms from history, else the 2 ms default: C(P) is linear in delta.
  const double with_history = cost_after_window_without_remote(true);
  const double without = cost_after_window_without_remote(false);
  REQUIRE(without > 0);
  CHECK(with_history / without == doctest::Approx(5.0).epsilon(0.01));
}

}  // namespace dancemoe::scheduler::test
