// SchedulerService driven with a FakeClock and a real SQLite file: the
// protocol rules, the placement loop and the two-phase migration, without
// sockets or sleeping.
#include "scheduler/daemon/service.h"

#include <doctest/doctest.h>

#include "tests/scheduler/daemon/service_harness.h"
#include "tests/support/placement_experts.h"

namespace dancemoe::scheduler::test {
namespace {

using testing::experts_of;

// Registers a and b (16 slots each for 24 experts) and commits the cold start.
void cold_start_two(Harness& h, double load_bytes_per_s = 1e9) {
  h.register_node("a", 16000, load_bytes_per_s);
  h.register_node("b", 16000, load_bytes_per_s);
  auto out = h.heartbeat_and_advance({"a", "b"}, 2100);
  REQUIRE(find_body<proto::PlacementPrepare>(out, "r-a") != nullptr);
  REQUIRE(find_body<proto::PlacementPrepare>(out, "r-b") != nullptr);
  auto commits = h.answer_ready(out);
  REQUIRE(find_body<proto::Commit>(commits, "r-a") != nullptr);
  REQUIRE(find_body<proto::Commit>(commits, "r-b") != nullptr);
  REQUIRE(h.service().committed_version() == 1);
}

}  // namespace

TEST_CASE("service: refuses a node of another model, naming both model ids") {
  Harness h;
  proto::Register reg = h.registration("a", 16000);
  reg.model_id = "other-model";
  auto out = h.send("a", reg);
  const auto* reply = find_body<proto::RegisterReply>(out);
  REQUIRE(reply != nullptr);
  CHECK_FALSE(reply->accepted);
  CHECK(reply->reason == "model id other-model (node a) != model-tiny (scheduler)");
  CHECK(h.service().counters().rejected_for(Rejection::kModelMismatch) == 1);
  CHECK(h.service().membership().up().empty());
}

TEST_CASE(
    "service: refuses another cluster id, a bad register, unregistered peers and wrong senders") {
  Harness h;
  proto::Envelope env = h.envelope("a", h.registration("a", 16000));
  env.cluster_id = "lab-2";
  auto out = h.deliver("r-a", env);
  const auto* error = find_body<proto::Error>(out);
  REQUIRE(error != nullptr);
  CHECK(error->code == StatusCode::kFailedPrecondition);
  CHECK(error->message == "cluster id 'lab-2' (a) != 'default' (scheduler)");

  proto::Register two_gpu0 = h.registration("a", 16000);
  two_gpu0.devices.push_back(two_gpu0.devices[0]);
  out = h.send("a", two_gpu0);
  REQUIRE(find_body<proto::RegisterReply>(out) != nullptr);
  CHECK_FALSE(find_body<proto::RegisterReply>(out)->accepted);
  CHECK(find_body<proto::RegisterReply>(out)->reason.find("device 'gpu0' is listed twice") !=
        std::string::npos);

  out = h.send("a", proto::Heartbeat{0, 0});
  error = find_body<proto::Error>(out);
  REQUIRE(error != nullptr);
  CHECK(error->code == StatusCode::kNotFound);  // what tells a node to register again
  CHECK(error->message.find("not registered") != std::string::npos);

  h.register_node("a", 16000);
  out = h.deliver("r-a", h.envelope("mallory", proto::Heartbeat{0, 0}));
  error = find_body<proto::Error>(out);
  REQUIRE(error != nullptr);
  CHECK(error->message == "sender 'mallory' does not match node 'a' registered on this connection");
  CHECK(h.service().counters().rejected_for(Rejection::kWrongSender) == 1);
  CHECK(h.service().counters().rejected_for(Rejection::kUnregistered) == 1);
  CHECK(h.service().counters().rejected_for(Rejection::kWrongCluster) == 1);
}

TEST_CASE("service: a node that misses k heartbeats is marked down, and must register again") {
  Harness h;
  h.register_node("a", 16000);
  h.register_node("b", 16000);
  // Heartbeats keep a up; b falls silent.
  for (int i = 0; i < 3; ++i) {
    h.send("a", proto::Heartbeat{0, 0});
    h.advance(1000);
  }
  CHECK(h.service().membership().find("a")->state == NodeState::kUp);
  CHECK(h.service().membership().find("b")->state == NodeState::kUp);  // exactly 3 s: not yet
  h.send("a", proto::Heartbeat{0, 0});
  h.advance(1);
  CHECK(h.service().membership().find("b")->state == NodeState::kDown);
  CHECK(h.service().membership().find("a")->state == NodeState::kUp);
  CHECK(h.service().counters().nodes_down == 1);
  auto out = h.send("b", proto::Heartbeat{0, 0});
  REQUIRE(find_body<proto::Error>(out) != nullptr);
  h.register_node("b", 16000);
  CHECK(h.service().membership().find("b")->state == NodeState::kUp);
}

TEST_CASE("service: cold start waits for joins to settle, places every expert, commits on ready") {
  Harness h;
  h.register_node("a", 16000);
  auto out = h.heartbeat_and_advance({"a"}, 1500);
  CHECK(find_body<proto::PlacementPrepare>(out) == nullptr);  // still settling
  h.register_node("b", 16000);                                // restarts the settle time
  out = h.heartbeat_and_advance({"a", "b"}, 1500);
  CHECK(find_body<proto::PlacementPrepare>(out) == nullptr);
  out = h.heartbeat_and_advance({"a", "b"}, 600);
  const auto* prepare = find_body<proto::PlacementPrepare>(out, "r-a");
  REQUIRE(prepare != nullptr);
  CHECK(prepare->version == 1);
  REQUIRE(prepare->nodes.size() == 2);
  size_t held = 0;
  for (const auto& node : prepare->nodes) {
    CHECK(node.expert_endpoint == "tcp://" + node.node_id + ":5551");
    for (const auto& d : node.devices) held += d.experts.size();
  }
  CHECK(held == 24);  // uniform: one copy of each of the 3 x 8 experts
  // Dense layer 1 never appears.
  for (const auto& node : prepare->nodes) {
    for (const auto& d : node.devices) {
      for (const auto& x : d.experts) CHECK(x.layer != 1);
    }
  }
  // Half ready: nothing committed yet; status shows who is ready and what each loads.
  auto replies = h.send("a", proto::Ready{1});
  CHECK(find_body<proto::Commit>(replies) == nullptr);
  CHECK(h.service().committed_version() == 0);
  auto preparing = h.query("status");
  REQUIRE(preparing.is_ok());
  const nlohmann::json& participants = (*preparing)["migration"]["participants"];
  REQUIRE(participants.size() == 2);
  CHECK(participants[0]["id"] == "a");
  CHECK(participants[0]["ready"] == true);
  CHECK(participants[1]["ready"] == false);
  CHECK(participants[0]["added"].get<int64_t>() + participants[1]["added"].get<int64_t>() == 24);
  CHECK(participants[1]["load_bytes"].get<uint64_t>() ==
        participants[1]["added"].get<uint64_t>() * 1000);  // tiny_model: 1000 bytes per expert
  replies = h.send("b", proto::Ready{1});
  CHECK(find_body<proto::Commit>(replies, "r-a") != nullptr);
  CHECK(find_body<proto::Commit>(replies, "r-b") != nullptr);
  CHECK(h.service().committed_version() == 1);
  auto decision = h.query("migrations");
  REQUIRE(decision.is_ok());
  CHECK((*decision)["decisions"][0]["trigger"] == "cold_start");
  CHECK((*decision)["decisions"][0]["policy"] == "uniform");
  CHECK((*decision)["migrations"][0]["outcome"] == "committed");
}

TEST_CASE("service: a resent report is stored once and acknowledged both times") {
  Harness h;
  h.register_node("a", 16000);
  const auto report = report_of(100, {{0, 1}, {2, 3}}, 7);
  auto first = h.send("a", report, 42);
  auto again = h.send("a", report, 42);
  REQUIRE(find_body<proto::Ack>(first) != nullptr);
  REQUIRE(find_body<proto::Ack>(again) != nullptr);
  CHECK(find_body<proto::Ack>(again)->sequence == 42);
  CHECK(h.service().counters().reports_stored == 1);
  CHECK(h.service().counters().reports_duplicate == 1);
  auto counts = h.store().counts_since(0, h.model().index);
  REQUIRE(counts.is_ok());
  CHECK((*counts)["a"][h.model().flat(0, 1)] == 7.0);
  CHECK((*counts)["a"][h.model().flat(2, 3)] == 7.0);
  // A node that restarted its sequence numbers is not a resend: another window.
  auto restarted = h.send("a", report_of(100, {{0, 1}}, 5, 9000), 42);
  REQUIRE(find_body<proto::Ack>(restarted) != nullptr);
  CHECK(h.service().counters().reports_stored == 2);
}

TEST_CASE("service: out-of-range reports are rejected with an Error and counted") {
  Harness h;
  h.register_node("a", 16000);
  struct Case {
    proto::ActivationReport report;
    std::string expected;
  };
  std::vector<Case> cases;
  cases.push_back({report_of(100, {{1, 0}}, 1), "layer 1 expert 0 is in a dense layer"});
  cases.push_back({report_of(100, {{0, 8}}, 1), "layer 0 expert 8 is out of range"});
  cases.push_back({report_of(100, {{9, 0}}, 1), "layer 9 expert 0 is out of range"});
  cases.push_back({report_of(100, {{0, 1}}, 4294967295u), "has count 4294967295, more than"});
  cases.push_back({report_of(100, {{0, 1}, {0, 1}}, 1), "is listed twice"});
  cases.push_back({report_of(10, {{0, 1}, {0, 2}, {0, 3}}, 10), "more than tokens x top-k = 20"});
  auto hits = report_of(100, {{0, 1}}, 3);
  hits.local_hits = 4;
  cases.push_back({hits, "local_hits: 4 is more than the 3 activations"});
  auto latency = report_of(100, {{0, 1}}, 3);
  latency.local_mean_latency_us = 1e12;
  cases.push_back({latency, "local_mean_latency_us: expected 0 to"});
  auto window = report_of(100, {{0, 1}}, 3);
  window.window_end_ms = window.window_start_ms + uint64_t{90} * 24 * 3600 * 1000;
  cases.push_back({window, "is longer than"});
  auto self_peer = report_of(100, {{0, 1}}, 3);
  self_peer.remote.push_back({"a", 1, 1.0, 1.0, 1, 0});
  cases.push_back({self_peer, "a node cannot be its own remote peer"});
  for (const Case& c : cases) {
    CAPTURE(c.expected);
    auto out = h.send("a", c.report);
    const auto* error = find_body<proto::Error>(out);
    REQUIRE(error != nullptr);
    CHECK(error->code == StatusCode::kInvalidArgument);
    CHECK(error->message.find(c.expected) != std::string::npos);
  }
  CHECK(h.service().counters().rejected_for(Rejection::kInvalidReport) == cases.size());
  CHECK(h.service().counters().reports_stored == 0);
  // The service still serves.
  CHECK(find_body<proto::Ack>(h.send("a", report_of(100, {{0, 1}}, 3))) != nullptr);
}

// The gate on the paper's proxy cost (policy optimal); the latency policy's
// gate is in service_rounds_test.cpp.
TEST_CASE("service: the gate adopts a placement whose saving pays for the migration") {
  Harness h;
  cold_start_two(h);
  auto placement = h.query("placement");
  REQUIRE(placement.is_ok());
  const std::vector<ExpertRef> on_b = experts_of(*placement, "b");
  REQUIRE(on_b.size() == 12);
  h.send("a", report_of(1000, on_b, 100));
  h.heartbeat_and_advance({"a", "b"}, 2000);
  auto d = h.query("round", {{"policy", "optimal"}});
  REQUIRE(d.is_ok());
  INFO(d->dump());
  CHECK((*d)["outcome"] == "adopted");
  CHECK((*d)["trigger"] == "on_demand");
  CHECK((*d)["cost_new_s"].get<double>() + (*d)["migration_s"].get<double>() <
        (*d)["cost_current_s"].get<double>());
  CHECK((*d)["cost_current_s"].get<double>() > 0);
  CHECK((*d)["version"] == 2);
  CHECK(h.service().migration().has_value());
}

TEST_CASE("service: the gate rejects a placement whose migration costs more than it saves") {
  Harness h;
  cold_start_two(h, /*load_bytes_per_s=*/1.0);  // 1000 s to load one expert
  auto placement = h.query("placement");
  REQUIRE(placement.is_ok());
  h.send("a", report_of(1000, experts_of(*placement, "b"), 100));
  h.heartbeat_and_advance({"a", "b"}, 2000);
  auto d = h.query("round", {{"policy", "optimal"}});
  REQUIRE(d.is_ok());
  INFO(d->dump());
  CHECK((*d)["outcome"] == "rejected");
  CHECK((*d)["cost_new_s"].get<double>() < (*d)["cost_current_s"].get<double>());
  CHECK((*d)["cost_new_s"].get<double>() + (*d)["migration_s"].get<double>() >=
        (*d)["cost_current_s"].get<double>());
  CHECK_FALSE(h.service().migration().has_value());
  CHECK(h.service().committed_version() == 1);
  // The proposal shows the same numbers without recording anything.
  auto proposal = h.query("propose", {{"policy", "optimal"}});
  REQUIRE(proposal.is_ok());
  CHECK((*proposal)["gate"]["adopt"] == false);
}

TEST_CASE("service: a prepare timeout or a node's abort aborts the version -- the old one stays") {
  Harness h;
  cold_start_two(h);
  auto placement = h.query("placement");
  REQUIRE(placement.is_ok());
  h.send("a", report_of(1000, experts_of(*placement, "b"), 100));
  h.heartbeat_and_advance({"a", "b"}, 1000);
  REQUIRE((*h.query("round"))["outcome"] == "adopted");
  h.send("a", proto::Ready{2});
  // b stays silent: the 5 s prepare timeout aborts version 2.
  auto out = h.heartbeat_and_advance({"a", "b"}, 2500);
  CHECK(find_body<proto::Abort>(out) == nullptr);
  out = h.heartbeat_and_advance({"a", "b"}, 2600);
  const auto* abort = find_body<proto::Abort>(out, "r-a");
  REQUIRE(abort != nullptr);
  CHECK(abort->version == 2);
  CHECK(abort->reason.find("prepare timed out") != std::string::npos);
  CHECK(abort->reason.find("waiting for b") != std::string::npos);
  CHECK(h.service().committed_version() == 1);

  // Next version is 3 (2 is spent); b refuses it.
  REQUIRE((*h.query("round"))["version"] == 3);
  out = h.send("b", proto::Abort{3, "out of memory"});
  abort = find_body<proto::Abort>(out, "r-a");
  REQUIRE(abort != nullptr);
  CHECK(abort->reason == "node 'b' aborted: out of memory");
  CHECK(h.service().committed_version() == 1);
  auto migrations = h.query("migrations");
  REQUIRE(migrations.is_ok());
  CHECK((*migrations)["migrations"][0]["outcome"] == "aborted");
  CHECK((*migrations)["migrations"][1]["outcome"] == "aborted");
  // A late Ready for an aborted version is refused, not acted on.
  out = h.send("b", proto::Ready{3});
  REQUIRE(find_body<proto::Error>(out) != nullptr);
  CHECK(h.service().counters().rejected_for(Rejection::kStaleReady) == 1);
}

TEST_CASE("service: a dead node's sole copies are repaired at once, gate bypassed, recorded") {
  Harness h;
  h.register_node("a", 12000);
  h.register_node("b", 12000);
  h.register_node("c", 8000);
  auto out = h.heartbeat_and_advance({"a", "b", "c"}, 2100);
  h.answer_ready(out);
  REQUIRE(h.service().committed_version() == 1);
  // c stops; a and b keep beating.
  for (int i = 0; i < 3; ++i) out = h.heartbeat_and_advance({"a", "b"}, 1000);
  out = h.heartbeat_and_advance({"a", "b"}, 100);
  CHECK(h.service().membership().find("c")->state == NodeState::kDown);
  const auto* prepare = find_body<proto::PlacementPrepare>(out, "r-a");
  REQUIRE(prepare != nullptr);
  CHECK(prepare->version == 2);
  CHECK(find_body<proto::PlacementPrepare>(out, "r-c") == nullptr);
  size_t held = 0;
  for (const auto& node : prepare->nodes) {
    CHECK(node.node_id != "c");
    for (const auto& d : node.devices) held += d.experts.size();
  }
  CHECK(held >= 24);
  auto commits = h.answer_ready(out);
  CHECK(find_body<proto::Commit>(commits) != nullptr);
  CHECK(h.service().committed_version() == 2);
  auto migrations = h.query("migrations");
  REQUIRE(migrations.is_ok());
  const auto& decision = (*migrations)["decisions"][0];
  CHECK(decision["trigger"] == "coverage_repair");
  CHECK(decision["outcome"] == "adopted");
  CHECK(decision["message"] == "coverage repair: gate bypassed");
}

TEST_CASE("service: a restart keeps versions and statistics, aborts a half-prepared version") {
  Harness h;
  cold_start_two(h);
  auto placement = h.query("placement");
  h.send("a", report_of(1000, experts_of(*placement, "b"), 100), 7);
  h.heartbeat_and_advance({"a", "b"}, 1000);
  REQUIRE((*h.query("round"))["version"] == 2);  // prepared, never ready

  h.restart();
  CHECK(h.service().committed_version() == 1);
  CHECK(h.service().membership().find("a")->state == NodeState::kUnknown);
  // The old connection is not trusted: register first.
  auto out = h.send("a", proto::Heartbeat{1, 0});
  REQUIRE(find_body<proto::Error>(out) != nullptr);
  out = h.register_node("a", 16000);
  CHECK(find_body<proto::RegisterReply>(out)->placement_version == 1);
  const auto* abort = find_body<proto::Abort>(out);
  REQUIRE(abort != nullptr);
  CHECK(abort->version == 2);
  // The report stored before the restart is still there, once.
  out = h.send("a", report_of(1000, experts_of(*placement, "b"), 100), 7);
  CHECK(find_body<proto::Ack>(out) != nullptr);
  CHECK(h.service().counters().reports_duplicate == 1);
  auto decisions = h.query("migrations");
  REQUIRE(decisions.is_ok());
  CHECK((*decisions)["migrations"][0]["to_version"] == 2);
  CHECK((*decisions)["migrations"][0]["outcome"] == "aborted");
  CHECK((*decisions)["migrations"][0]["reason"] == "the scheduler restarted during prepare");
  // b comes back too; the statistics from before the restart still favour
  // a move, and it becomes version 3: versions never go back.
  h.register_node("b", 16000);
  auto next = h.query("round");
  REQUIRE(next.is_ok());
  INFO(next->dump());
  CHECK((*next)["from_version"] == 1);
  CHECK((*next)["outcome"] == "adopted");
  CHECK((*next)["version"] == 3);
}

TEST_CASE("service: a node that joins after the commit is re-synchronised to the placement") {
  Harness h;
  cold_start_two(h);
  auto out = h.register_node("c", 16000);
  const auto* prepare = find_body<proto::PlacementPrepare>(out, "r-c");
  REQUIRE(prepare != nullptr);
  CHECK(prepare->version == 1);
  auto commit = h.send("c", proto::Ready{1});
  REQUIRE(find_body<proto::Commit>(commit, "r-c") != nullptr);
  CHECK(h.service().counters().resyncs_completed == 1);
  CHECK(h.service().committed_version() == 1);
}

TEST_CASE("service: status, nodes and placement queries describe the cluster") {
  Harness h;
  cold_start_two(h);
  auto status = h.query("status");
  REQUIRE(status.is_ok());
  CHECK((*status)["placement"]["version"] == 1);
  CHECK((*status)["nodes"]["up"] == 2);
  CHECK((*status)["model"]["moe_layers"] == 3);
  CHECK((*status)["last_decision"]["outcome"] == "adopted");
  CHECK((*status)["migration"].is_null());
  auto nodes = h.query("nodes");
  REQUIRE(nodes.is_ok());
  CHECK((*nodes)["nodes"].size() == 2);
  CHECK((*nodes)["nodes"][0]["experts_held"] == 12);
  auto layer = h.query("placement", {{"layer", 2}});
  REQUIRE(layer.is_ok());
  REQUIRE((*layer)["layers"].size() == 1);
  CHECK((*layer)["layers"][0]["layer"] == 2);
  CHECK((*layer)["layers"][0]["holders"].size() == 8);
  auto dense = h.query("placement", {{"layer", 1}});
  REQUIRE_FALSE(dense.is_ok());
  CHECK(dense.status().message().find("not a MoE layer") != std::string::npos);
  auto unknown = h.query("frobnicate");
  CHECK(unknown.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("service: an operator placement is applied without the gate and recorded as such") {
  Harness h;
  cold_start_two(h, /*load_bytes_per_s=*/1.0);
  auto placement = h.query("placement");
  REQUIRE(placement.is_ok());
  // Swap the two nodes' sets: pointless, and the gate would never allow it.
  nlohmann::json swapped = {{"nodes", nlohmann::json::object()}};
  swapped["nodes"]["a"] = (*placement)["nodes"]["b"];
  swapped["nodes"]["b"] = (*placement)["nodes"]["a"];
  auto d = h.query("apply", {{"placement", swapped}});
  REQUIRE(d.is_ok());
  CHECK((*d)["outcome"] == "adopted");
  CHECK((*d)["trigger"] == "operator");
  CHECK((*d)["message"] == "operator override: gate not applied");
  CHECK((*d)["migration_s"].get<double>() > 1000.0);
  // A placement that drops an expert is refused, naming it.
  nlohmann::json partial = swapped;
  nlohmann::json& a_devices = partial["nodes"]["a"]["devices"];
  a_devices[a_devices.begin().key()].erase(0);
  h.send("a", proto::Abort{2, "operator test"});
  auto bad = h.query("apply", {{"placement", partial}});
  REQUIRE(bad.is_ok());
  CHECK((*bad)["outcome"] == "error");
  CHECK((*bad)["message"].get<std::string>().find("placement does not cover") != std::string::npos);
}

}  // namespace dancemoe::scheduler::test
