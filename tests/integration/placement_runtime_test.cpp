// A small run of the runtime placement study (tests/bench/placement_study.h,
// the full study is bench_placement_runtime): a real scheduler and three
// real nodes behind link emulators, replaying a routing trace written here
// for the tiny model, measured under `uniform` and `latency`, before and
// after a workload shift.
#include <doctest/doctest.h>

#include "common/placement/routing_trace.h"
#include "tests/bench/placement_study.h"
#include "tests/support/paths.h"
#include "tests/support/scheduler_process.h"

namespace dancemoe::testing {
namespace {

// Two domains on the tiny model (3 MoE layers of 8 experts, top-2): tokens of
// "x" pick {0, 1} or {2, 3} at every layer, tokens of "y" {4, 5} or {6, 7}.
RoutingTrace two_domain_trace() {
  RoutingTrace t;
  t.n_layers = 3;
  t.top_k = 2;
  t.max_expert = 7;
  t.origins = {"x", "y"};
  for (int32_t origin = 0; origin < 2; ++origin) {
    for (int64_t id = 0; id < 4; ++id) {
      TraceRequest r;
      r.origin = origin;
      r.id = id;
      r.n_tokens = 16;
      for (int32_t token = 0; token < r.n_tokens; ++token) {
        const int16_t first = static_cast<int16_t>(4 * origin + 2 * ((token + id) % 2));
        for (int32_t layer = 0; layer < t.n_layers; ++layer) {
          r.experts.push_back(first);
          r.experts.push_back(static_cast<int16_t>(first + 1));
        }
      }
      t.requests.push_back(std::move(r));
    }
  }
  return t;
}

}  // namespace

TEST_CASE("placement study: latency keeps steps local on a running cluster, uniform does not") {
  TempDir work("placement_study");
  REQUIRE(write_routing_trace(work.path() / "trace.csv", two_domain_trace()).is_ok());
  bench::StudyOptions o;
  o.node_binary = DMOE_NODE_PATH;
  o.scheduler_binary = DMOE_SCHEDULER_PATH;
  o.model = tiny_model().dir;
  o.trace = work.path() / "trace.csv";
  o.work = work.path();
  o.origins = {"x", "y"};
  o.nodes = {{"a", "x", 0.6}, {"b", "y", 0.6}, {"c", "x", 0.55}};
  o.policies = {"uniform", "latency"};
  o.links = {{"relay", 1e9, 0.2}};
  o.rounds = 1;
  o.requests_per_node = 1;
  o.tokens_per_request = 8;
  o.profile_requests = 2;
  o.shift_node = "c";
  o.shift_domain = "y";
  Result<bench::StudyResult> r =
      bench::run_study(o, [](const std::string& line) { MESSAGE(line); });
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  // Per policy: before, stale, after.
  REQUIRE(r->phases.size() == 6);
  std::map<std::pair<std::string, std::string>, bench::PhaseResult> by;
  for (const bench::PhaseResult& p : r->phases) by[{p.policy, p.phase}] = p;
  for (const auto& [key, p] : by) {
    CAPTURE(key.first);
    CAPTURE(key.second);
    CHECK(p.tokens == 3 * 7);  // 8 tokens: 7 decode steps per node
    CHECK(p.steps > 0);
    CHECK(p.token_ms.size() == p.tokens);
  }
  const auto l_step = [&](const std::string& policy, const std::string& phase) {
    const bench::PhaseResult& p = by.at({policy, phase});
    return static_cast<double>(p.local_steps) / static_cast<double>(p.steps);
  };
  // Each domain uses four experts per layer (12 in all), and every node has
  // room for 13 or more: latency gives each node every expert its users
  // need, so (nearly) all steps are local; uniform spreads one copy of each
  // expert and most steps wait for a peer.
  CHECK(l_step("latency", "before") > l_step("uniform", "before"));
  CHECK(l_step("latency", "before") >= 0.9);
  CHECK(by.at({"uniform", "before"}).remote_bytes > by.at({"latency", "before"}).remote_bytes);
  // After the shift c's users need y's experts: latency's gated round moves
  // them (loading twelve small experts pays over the 300 s horizon).
  CHECK(by.at({"latency", "after"}).decision == "adopted");
  CHECK(l_step("latency", "after") > l_step("latency", "stale"));
  REQUIRE(r->calibration.size() == 1);
  CHECK(r->calibration[0].remote_calls > 0);
  CHECK(r->calibration[0].remote_call_us > 0);
}

}  // namespace dancemoe::testing
