// The placement round's problem building: node selection, delta[n],
// speeds, cold start, and conversions between stored and library forms.
#include "scheduler/daemon/planner.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "tests/scheduler/daemon/service_harness.h"

namespace dancemoe::scheduler::test {
namespace {

Member planner_member(const std::string& id, uint64_t budget, double speed = 1e9) {
  Member m;
  m.record.node_id = id;
  m.record.expert_endpoint = "tcp://" + id;
  m.record.devices = {{"gpu0", budget, speed, "cuda"}};
  m.state = NodeState::kUp;
  return m;
}

store::NodeTotals latencies(uint64_t local_calls, double local_us, uint64_t remote_calls,
                            double remote_us) {
  store::NodeTotals t;
  t.local_calls = local_calls;
  t.local_latency_sum_us = local_calls * local_us;
  t.remote_calls = remote_calls;
  t.remote_latency_sum_us = remote_calls * remote_us;
  return t;
}

}  // namespace

TEST_CASE("planner: delta comes from measurements, then history, then the median, then default") {
  const ModelInfo model = tiny_model();
  Member a = planner_member("a", 16000), b = planner_member("b", 16000),
         c = planner_member("c", 16000), d = planner_member("d", 16000);
  PlanInputs in;
  in.nodes = {&d, &c, &b, &a};
  in.window_totals["a"] = latencies(10, 100, 10, 2100);   // 2 ms
  in.window_totals["b"] = latencies(10, 500, 0, 0);       // no remote calls in the window
  in.history_totals["b"] = latencies(10, 100, 10, 4100);  // 4 ms over history
  in.window_totals["c"] = latencies(10, 900, 10, 100);    // remote faster: clamped to 0
  PlannerOptions options;
  options.default_remote_penalty_s = 0.5;
  auto plan = build_problem(model, in, options);
  REQUIRE(plan.is_ok());
  const auto& nodes = plan->problem.cluster.nodes;
  REQUIRE(nodes.size() == 4);
  CHECK(nodes[0].id == "a");  // sorted by id
  CHECK(nodes[0].remote_penalty_s == doctest::Approx(0.002));
  CHECK(nodes[1].remote_penalty_s == doctest::Approx(0.004));
  CHECK(nodes[2].remote_penalty_s == 0.0);
  CHECK(nodes[3].remote_penalty_s == doctest::Approx(0.002));  // median of 0, 0.002, 0.004
  CHECK(plan->delta_source["a"] == "measured (window)");
  CHECK(plan->delta_source["b"] == "measured (history)");
  CHECK(plan->delta_source["d"] == "cluster median");

  PlanInputs none;
  none.nodes = {&a};
  auto fallback = build_problem(model, none, options);
  REQUIRE(fallback.is_ok());
  CHECK(fallback->problem.cluster.nodes[0].remote_penalty_s == 0.5);
  CHECK(fallback->delta_source["a"] == "default");
}

TEST_CASE("planner: thin clients only route -- devices without bandwidth get the default") {
  const ModelInfo model = tiny_model();
  Member a = planner_member("a", 30000, 0.0), thin = planner_member("thin", 10);
  PlanInputs in;
  in.nodes = {&thin, &a};
  PlannerOptions options;
  options.default_load_bytes_per_s = 5e8;
  auto plan = build_problem(model, in, options);
  REQUIRE(plan.is_ok());
  REQUIRE(plan->placed.size() == 1);
  REQUIRE(plan->routing_only.size() == 1);
  CHECK(plan->routing_only[0]->id() == "thin");
  CHECK(plan->problem.cluster.nodes[0].devices[0].load_bytes_per_s == 5e8);
  auto candidate = solve_candidate(*plan, model, "");
  REQUIRE(candidate.is_ok());
  const auto wire = to_wire(candidate->placement, *plan, model);
  REQUIRE(wire.size() == 2);
  CHECK(wire[1].node_id == "thin");
  CHECK(wire[1].devices[0].experts.empty());
  CHECK(wire[0].devices[0].experts.size() == 24);

  PlanInputs only_thin;
  only_thin.nodes = {&thin};
  CHECK(build_problem(model, only_thin, options).status().message().find("no up node has memory") !=
        std::string::npos);
}

TEST_CASE("planner: cold start is uniform without statistics, cluster-wide with some history") {
  const ModelInfo model = tiny_model();
  Member a = planner_member("a", 16000), b = planner_member("b", 16000);
  PlanInputs in;
  in.nodes = {&a, &b};
  auto plan = build_problem(model, in, {});
  REQUIRE(plan.is_ok());
  CHECK(plan->cold_start);
  CHECK(plan->policy == "uniform");

  std::vector<double> counts(24, 0.0);
  counts[3] = 30;
  counts[5] = 10;
  in.counts["a"] = counts;
  plan = build_problem(model, in, {});
  REQUIRE(plan.is_ok());
  CHECK(plan->policy == "latency");  // the default
  CHECK(plan->note.find("1 given the cluster-wide distribution") != std::string::npos);
  CHECK(plan->problem.activations.counts[1][3] == 30);  // b borrows a's distribution
  CHECK(plan->problem.activations.counts[1][5] == 10);
  auto candidate = solve_candidate(*plan, model, "");
  REQUIRE(candidate.is_ok());
  CHECK(candidate->gate.adopt);
}

TEST_CASE("planner: a stored placement maps onto the problem -- a dead node's experts drop out") {
  const ModelInfo model = tiny_model();
  Member a = planner_member("a", 16000), b = planner_member("b", 16000);
  store::PlacementRecord record;
  record.nodes = {{"a", "", {{"gpu0", {{0, 0}, {2, 1}}}}},
                  {"gone", "", {{"gpu0", {{3, 7}}}}},
                  {"b", "", {{"gpu9", {{0, 1}}}}}};  // device no longer there
  PlanInputs in;
  in.nodes = {&a, &b};
  in.current = &record;
  auto plan = build_problem(model, in, {});
  REQUIRE(plan.is_ok());
  REQUIRE(plan->problem.current.has_value());
  const auto& current = *plan->problem.current;
  CHECK(current.experts[0][0] ==
        std::vector<placement::ExpertIndex>{model.flat(0, 0), model.flat(2, 1)});
  CHECK(current.experts[1][0].empty());
  Membership membership;
  membership.attach(a.record, {}, "ra", 0, 0);
  CHECK_FALSE(covers_all(record, membership, model));
  auto moves = diff_placements(&record.nodes, {{"a", "", {{"gpu0", {{0, 0}, {0, 3}}}}}}, model);
  REQUIRE(moves.size() == 1);
  CHECK(moves[0].added == 1);
  CHECK(moves[0].removed == 1);
  CHECK(moves[0].kept == 1);
  CHECK(moves[0].load_bytes == 1000);
}

TEST_CASE("planner: a repair is staged to each node's migration headroom and still converges") {
  // 24 experts of 1000 B. c held 16..23 and died; a (0..7) and b (8..15)
  // have room for 12 each and may hold 2 more while loading. Both want c's
  // experts; the optimal repair has a load all 8 of them at once -- before,
  // adopted and then aborted by the node (over its memory), retried every
  // few seconds, coverage never back.
  const ModelInfo model = tiny_model();
  Member a = planner_member("a", 12000), b = planner_member("b", 12000);
  for (Member* m : {&a, &b}) m->record.migration_headroom_bytes = 2000;
  auto refs = [&](int32_t from, int32_t to) {
    std::vector<ExpertRef> out;
    for (int32_t x = from; x < to; ++x) out.push_back(model.ref(x));
    return out;
  };
  a.resident = refs(0, 8);
  b.resident = refs(8, 16);
  store::PlacementRecord current;
  current.version = 1;
  current.nodes = {{"a", "tcp://a", {{"gpu0", refs(0, 8)}}},
                   {"b", "tcp://b", {{"gpu0", refs(8, 16)}}},
                   {"c", "tcp://c", {{"gpu0", refs(16, 24)}}}};
  PlanInputs in;
  in.nodes = {&a, &b};
  in.counts["a"] = std::vector<double>(24, 1.0);
  in.counts["b"] = std::vector<double>(24, 1.0);
  for (int32_t x = 16; x < 24; ++x) {
    in.counts["a"][static_cast<size_t>(x)] = 100;
    in.counts["b"][static_cast<size_t>(x)] = 50;
  }
  auto covered = [&](const std::vector<NodePlacement>& nodes) {
    std::set<int32_t> out;
    for (const NodePlacement& n : nodes) {
      if (n.node_id == "c") continue;  // dead
      for (const DevicePlacement& d : n.devices) {
        for (const ExpertRef& r : d.experts) out.insert(model.flat(r.layer, r.expert));
      }
    }
    return out.size();
  };
  size_t coverage = covered(current.nodes);
  REQUIRE(coverage == 16);
  int rounds = 0;
  bool staged = false;
  while (coverage < 24 && rounds < 6) {
    ++rounds;
    in.current = &current;
    auto plan = build_problem(model, in, {});
    REQUIRE(plan.is_ok());
    auto candidate = solve_candidate(*plan, model, "");
    REQUIRE(candidate.is_ok());
    staged = staged || candidate->placement.method.find("staged") != std::string::npos;
    const std::vector<NodePlacement> next = to_wire(candidate->placement, *plan, model);
    for (const NodePlacement& n : next) {
      Member& m = n.node_id == "a" ? a : b;
      std::set<ExpertRef> resident(m.resident.begin(), m.resident.end());
      uint64_t load = 0;
      std::vector<ExpertRef> held;
      for (const DevicePlacement& d : n.devices) {
        for (const ExpertRef& r : d.experts) {
          held.push_back(r);
          if (resident.count(r) == 0) load += 1000;
        }
      }
      CAPTURE(n.node_id);
      CAPTURE(rounds);
      // What the node checks: resident + loaded <= budget + headroom.
      CHECK(resident.size() * 1000 + load <= 12000 + 2000);
      CHECK(held.size() <= 12);
      std::sort(held.begin(), held.end());
      m.resident = held;  // committed
    }
    const size_t now = covered(next);
    CHECK(now >= coverage);  // a stage never covers less
    coverage = now;
    current.version += 1;
    current.nodes = next;
  }
  CHECK(staged);
  CHECK(coverage == 24);
  CHECK(rounds <= 4);
  MESSAGE("coverage back after " << rounds << " staged round(s)");
}

TEST_CASE("planner: an operator placement beyond a node's headroom is refused, not staged") {
  const ModelInfo model = tiny_model();
  Member a = planner_member("a", 12000), b = planner_member("b", 12000);
  a.record.migration_headroom_bytes = 1000;
  b.record.migration_headroom_bytes = 1000;
  for (int32_t x = 0; x < 24; ++x) (x < 12 ? a : b).resident.push_back(model.ref(x));
  store::PlacementRecord current;
  current.version = 1;
  std::vector<ExpertRef> first, second;
  for (int32_t x = 0; x < 24; ++x) (x < 12 ? first : second).push_back(model.ref(x));
  current.nodes = {{"a", "tcp://a", {{"gpu0", first}}}, {"b", "tcp://b", {{"gpu0", second}}}};
  PlanInputs in;
  in.nodes = {&a, &b};
  in.current = &current;
  auto plan = build_problem(model, in, {});
  REQUIRE(plan.is_ok());
  // Swap everything: each node would load 12 experts beside its 12.
  placement::Placement swap = placement::empty_placement(plan->problem.cluster);
  for (int32_t x = 0; x < 24; ++x) swap.experts[x < 12 ? 1 : 0][0].push_back(x);
  auto refused = evaluate_candidate(*plan, model, swap);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message().find("--migration-headroom") != std::string::npos);
}

}  // namespace dancemoe::scheduler::test

namespace dancemoe::scheduler::test {

TEST_CASE("planner: device compute costs are measured when every device is, else priors by kind") {
  PlannerOptions options;
  options.min_measured_pairs = 100;
  std::vector<store::DeviceRecord> devices = {{"cuda:0", 1000, 1e9, "cuda", 0, 0},
                                              {"cpu", 1000, 1e9, "cpu", 0, 0}};
  CHECK(device_compute_costs(devices, options) == std::vector<double>{0.1, 1.0});
  devices[0].add_compute(500, 500.0);  // 1 us per pair
  // The CPU has no measurement yet: priors for both, one unit per node.
  CHECK(device_compute_costs(devices, options) == std::vector<double>{0.1, 1.0});
  devices[1].add_compute(400, 6000.0);  // 15 us per pair
  const std::vector<double> measured = device_compute_costs(devices, options);
  CHECK(measured[0] == doctest::Approx(1.0));
  CHECK(measured[1] == doctest::Approx(15.0));
}

}  // namespace dancemoe::scheduler::test
