// Timer-driven placement rounds with the default policy (latency), on a
// FakeClock: the periodic round follows a workload shift (issue 17), and the
// co-activation pairs of reports reach the store and the placement problem.
#include <doctest/doctest.h>

#include <algorithm>

#include "scheduler/daemon/service.h"
#include "tests/scheduler/daemon/service_harness.h"
#include "tests/support/placement_experts.h"

namespace dancemoe::scheduler::test {
namespace {

using testing::experts_of;

// A report of 500 tokens that each pick experts 0 and 1 of every listed
// layer (the tiny model is top-2), with the pair (0, 1) counted.
proto::ActivationReport uses_layers(const std::vector<int32_t>& layers, uint64_t start_ms) {
  std::vector<ExpertRef> experts;
  for (int32_t l : layers) {
    experts.push_back({static_cast<uint16_t>(l), 0});
    experts.push_back({static_cast<uint16_t>(l), 1});
  }
  proto::ActivationReport r = report_of(500, experts, 500, start_ms);
  for (int32_t l : layers) r.pairs.push_back({l, 0, 1, 500});
  return r;
}

bool holds_layer(const nlohmann::json& placement, const std::string& node, int32_t layer) {
  int n = 0;
  for (const ExpertRef& x : experts_of(placement, node)) n += x.layer == layer ? 1 : 0;
  return n == 8;
}

// Heartbeats every second until the periodic round prepares a version, then
// answers Ready; returns the decision it recorded.
nlohmann::json run_until_periodic_commit(Harness& h, uint64_t version) {
  for (int second = 0; second < 120; ++second) {
    auto out = h.heartbeat_and_advance({"a", "b"}, 1000);
    if (find_body<proto::PlacementPrepare>(out) == nullptr) continue;
    h.answer_ready(out);
    break;
  }
  REQUIRE(h.service().committed_version() == version);
  auto history = h.query("migrations");
  REQUIRE(history.is_ok());
  return (*history)["decisions"][0];
}

}  // namespace

TEST_CASE("service rounds: the default policy's periodic round follows a workload shift") {
  Harness h;  // period 60 s, horizon 300 s, the default policy
  h.register_node("a", 16000);
  h.register_node("b", 16000);
  h.answer_ready(h.heartbeat_and_advance({"a", "b"}, 2100));
  REQUIRE(h.service().committed_version() == 1);  // cold start: uniform

  // a's users need model layers 0 and 2, b's layer 3; every token waits for
  // a peer under the uniform spread.
  h.send("a", uses_layers({0, 2}, 3000));
  h.send("b", uses_layers({3}, 3000));
  nlohmann::json d = run_until_periodic_commit(h, 2);
  INFO(d.dump());
  CHECK(d["trigger"] == "periodic");
  CHECK(d["policy"] == "latency");
  CHECK(d["outcome"] == "adopted");
  auto placement = h.query("placement");
  REQUIRE(placement.is_ok());
  CHECK(holds_layer(*placement, "a", 0));
  CHECK(holds_layer(*placement, "a", 2));
  CHECK(holds_layer(*placement, "b", 3));

  // The shift: a's users now need layers 2 and 3. The next periodic round
  // (60 s later, no operator involved) moves layer 3 to a -- the gate
  // passes because the steps it makes local over the horizon outweigh
  // loading eight experts -- and b keeps covering layer 0.
  h.send("a", uses_layers({2, 3}, 70'000));
  h.send("b", uses_layers({3}, 70'000));
  d = run_until_periodic_commit(h, 3);
  INFO(d.dump());
  CHECK(d["trigger"] == "periodic");
  CHECK(d["outcome"] == "adopted");
  CHECK(d["cost_new_s"].get<double>() + d["migration_s"].get<double>() <
        d["cost_current_s"].get<double>());
  placement = h.query("placement");
  REQUIRE(placement.is_ok());
  CHECK(holds_layer(*placement, "a", 2));
  CHECK(holds_layer(*placement, "a", 3));
  CHECK(holds_layer(*placement, "b", 0));

  // Nothing changes any more: the next round finds nothing that pays.
  h.send("a", uses_layers({2, 3}, 140'000));
  for (int second = 0; second < 61; ++second) h.heartbeat_and_advance({"a", "b"}, 1000);
  auto history = h.query("migrations");
  REQUIRE(history.is_ok());
  CHECK((*history)["decisions"][0]["trigger"] == "periodic");
  CHECK((*history)["decisions"][0]["outcome"] == "rejected");
  CHECK(h.service().committed_version() == 3);
}

TEST_CASE("service rounds: reported co-activation pairs are stored and checked") {
  Harness h;
  h.register_node("a", 16000);
  auto out = h.send("a", uses_layers({0, 3}, 1000));
  REQUIRE(find_body<proto::Ack>(out) != nullptr);
  auto pairs = h.store().pairs_since(0, h.model().index);
  REQUIRE(pairs.is_ok());
  CHECK((*pairs)["a"].size() == 2);
  CHECK((*pairs)["a"][{h.model().flat(0, 0), h.model().flat(0, 1)}] == 500.0);
  CHECK((*pairs)["a"][{h.model().flat(3, 0), h.model().flat(3, 1)}] == 500.0);

  struct Case {
    proto::ExpertPair pair;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{1, 0, 1, 5}, "expected two experts a < b of one MoE layer"},  // dense layer
      {{0, 1, 0, 5}, "expected two experts a < b"},
      {{0, 0, 9, 5}, "expected two experts a < b"},
      {{0, 0, 1, 501}, "more often than one of them was routed (500)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.expected);
    proto::ActivationReport r = uses_layers({0}, 5000);
    r.pairs = {c.pair};
    out = h.send("a", r);
    const auto* error = find_body<proto::Error>(out);
    REQUIRE(error != nullptr);
    CHECK(error->message.find(c.expected) != std::string::npos);
  }
  proto::ActivationReport twice = uses_layers({0}, 6000);
  twice.pairs.push_back(twice.pairs.front());
  out = h.send("a", twice);
  REQUIRE(find_body<proto::Error>(out) != nullptr);
  CHECK(find_body<proto::Error>(out)->message.find("listed twice") != std::string::npos);
}

}  // namespace dancemoe::scheduler::test
