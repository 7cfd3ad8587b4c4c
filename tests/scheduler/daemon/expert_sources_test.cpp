// Partial checkpoints on the scheduler's side: every expert must exist on
// some up node (disk or memory) before a placement is tried, and a cold
// start places experts on the nodes that have their files.
#include "scheduler/daemon/expert_sources.h"

#include <doctest/doctest.h>

#include <functional>

#include "tests/scheduler/daemon/service_harness.h"

namespace dancemoe::scheduler::test {
namespace {

Member member(const std::string& id, uint64_t budget, const ModelInfo& model,
              const std::function<bool(int32_t)>& has_file) {
  Member m;
  m.record.node_id = id;
  m.record.expert_endpoint = "tcp://" + id;
  m.record.devices = {{"cpu", budget, 1e9, "cpu"}};
  m.state = NodeState::kUp;
  if (has_file) {
    m.expert_files_partial = true;
    m.expert_files.assign(static_cast<size_t>(model.index.n_total), false);
    for (int32_t x = 0; x < model.index.n_total; ++x)
      m.expert_files[static_cast<size_t>(x)] = has_file(x);
  }
  return m;
}

PlanProblem plan_of(const ModelInfo& model, std::vector<const Member*> nodes) {
  PlanInputs in;
  in.nodes = std::move(nodes);
  auto plan = build_problem(model, in, PlannerOptions{});
  REQUIRE(plan.is_ok());
  return std::move(*plan);
}

}  // namespace

TEST_CASE("expert sources: an expert on no node's disk nor in memory is named, with its file") {
  const ModelInfo model = tiny_model();  // MoE layers 0, 2, 3 of 8 experts
  Member a = member("a", 8000, model, [](int32_t x) { return x % 2 == 0; });
  Member b = member("b", 8000, model, [](int32_t x) { return x < 12; });
  const PlanProblem plan = plan_of(model, {&a, &b});
  const Status missing = check_expert_sources(plan, model, nullptr);
  REQUIRE(missing.code() == StatusCode::kFailedPrecondition);
  CHECK(missing.message().find("6 of 24 experts exist on no up node") != std::string::npos);
  CHECK(missing.message().find("layer 2 expert 5 (experts/L0002-E0005.bin)") != std::string::npos);

  // In memory on a node (the committed placement) counts.
  store::PlacementRecord current;
  current.version = 1;
  std::vector<ExpertRef> held;
  for (int32_t x = 12; x < 24; ++x) held.push_back(model.ref(x));
  current.nodes = {{"b", "tcp://b", {{"cpu", held}}}};
  CHECK(check_expert_sources(plan, model, &current).is_ok());

  // A node with the whole model has every file.
  Member c = member("c", 8000, model, nullptr);
  CHECK(check_expert_sources(plan_of(model, {&a, &b, &c}), model, nullptr).is_ok());
}

TEST_CASE("expert sources: a cold start places each expert on a node with its file") {
  const ModelInfo model = tiny_model();
  Member a = member("a", 8000, model, [](int32_t x) { return x % 3 == 0; });
  Member b = member("b", 8000, model, [](int32_t x) { return x % 3 == 1; });
  Member c = member("c", 8000, model, [](int32_t x) { return x % 3 == 2; });
  const PlanProblem plan = plan_of(model, {&a, &b, &c});
  REQUIRE(plan.cold_start);
  REQUIRE(plan.policy == "uniform");
  auto candidate = solve_candidate(plan, model, "");
  REQUIRE(candidate.is_ok());
  int placed = 0;
  for (size_t n = 0; n < plan.placed.size(); ++n) {
    for (const auto& device : candidate->placement.experts[n]) {
      for (placement::ExpertIndex x : device) {
        CAPTURE(plan.placed[n]->id());
        CAPTURE(x);
        CHECK(has_expert_file(plan, n, x));
        ++placed;
      }
    }
  }
  CHECK(placed == 24);  // every expert once: coverage kept
}

TEST_CASE("expert sources: swaps keep every expert covered and every device within budget") {
  const ModelInfo model = tiny_model();
  // a has every file, b none: nothing to gain for b, and nothing may break.
  Member a = member("a", 12000, model, [](int32_t) { return true; });
  Member b = member("b", 12000, model, [](int32_t) { return false; });
  const PlanProblem plan = plan_of(model, {&a, &b});
  auto candidate = solve_candidate(plan, model, "");
  REQUIRE(candidate.is_ok());
  placement::Placement p = candidate->placement;
  CHECK(prefer_expert_files(plan, &p) == 0);
  std::vector<int> copies(24, 0);
  for (const auto& node : p.experts) {
    for (const auto& device : node) {
      CHECK(device.size() <= 12);
      for (placement::ExpertIndex x : device) ++copies[static_cast<size_t>(x)];
    }
  }
  for (int n : copies) CHECK(n >= 1);
}

}  // namespace dancemoe::scheduler::test
