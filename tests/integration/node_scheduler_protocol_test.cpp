// The node agent against the scheduler's side of the real protocol (issue
// 5): two `dancemoe-node` processes attached to a test protocol peer over
// real sockets -- registration, heartbeats, activation reports, a placement
// prepared / readied / committed, the local-hit ratio the scheduler would
// compute from the reports equal to the node's own, and the scheduler going
// away and coming back without losing a report. (The same flows against the
// real daemon are the lead's end-to-end tests.)
#include <doctest/doctest.h>

#include <random>

#include "tests/integration/node_cluster.h"
#include "tests/integration/scripted_scheduler.h"

namespace dancemoe::testing {
namespace {

using namespace std::chrono_literals;

// The scheduler's computation: activations of experts the node holds in `placement`.
uint64_t scheduler_local_hits(const proto::ActivationReport& r, const NodePlacement& node) {
  uint64_t hits = 0;
  for (const proto::ExpertCount& c : r.counts) {
    for (const DevicePlacement& d : node.devices) {
      for (const ExpertRef& e : d.experts) {
        if (e.layer == c.layer && e.expert == c.expert) hits += c.count;
      }
    }
  }
  return hits;
}

uint64_t total_count(const proto::ActivationReport& r) {
  uint64_t n = 0;
  for (const proto::ExpertCount& c : r.counts) n += c.count;
  return n;
}

uint64_t reported_activations(const ScriptedScheduler& scheduler, const std::string& id) {
  uint64_t n = 0;
  const auto it = scheduler.reports.find(id);
  if (it == scheduler.reports.end()) return 0;
  for (const auto& [seq, r] : it->second) n += total_count(r);
  return n;
}

}  // namespace

TEST_CASE("node protocol: register, prepare/ready/commit, reports, scheduler away and back") {
  TempDir work("node_protocol");
  const std::filesystem::path model = work.path() / "tiny";
  write_model(SyntheticModelSpec{}, model);
  const std::vector<int32_t> layers = moe_layers_of(model);
  zmq::context_t context;
  const int port = free_tcp_port();
  ClusterKeys keys(work.path() / "keys");
  auto scheduler = std::make_unique<ScriptedScheduler>(context, endpoint_of(port), &keys);
  scheduler->cluster_id = "lab";
  for (const char* id : {"a", "b"}) scheduler->admit(id, keys.pair(id).public_key);

  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
  for (const char* id : {"a", "b"}) {
    std::vector<std::string> args = {"--model",
                                     model.string(),
                                     "--scheduler",
                                     endpoint_of(port),
                                     "--cluster-id",
                                     "lab",
                                     "--experts",
                                     "tcp://127.0.0.1:*",
                                     "--http",
                                     "127.0.0.1:0",
                                     "--threads",
                                     "1",
                                     "--report-interval",
                                     "200ms",
                                     "--expert-memory",
                                     "64M"};
    for (const std::string& a : keys.node_args(id)) args.push_back(a);
    nodes[id] = std::make_unique<NodeProcess>(work.path(), id, args);
  }
  std::map<std::string, proto::Register> registered;
  while (registered.size() < 2) {
    auto reg = scheduler->expect<proto::Register>(20s);
    REQUIRE(reg);
    registered[reg->first.from] = reg->second;
    scheduler->send(reg->first.from, proto::RegisterReply{true, "", 100, 60000, 0});
    scheduler->send_members(reg->first.from);
  }
  for (auto& [id, node] : nodes) {
    REQUIRE(node->wait_ready());
    const proto::Register& r = registered[id];
    CHECK(r.node_id == id);
    CHECK(r.model_id.size() == 32);
    REQUIRE(r.devices.size() == 1);
    CHECK(r.devices[0].expert_budget_bytes == 64ull << 20);
    CHECK(r.devices[0].load_bytes_per_s > 0);
    CHECK(r.expert_endpoint == node->expert_endpoint());  // the bound ephemeral port
    CHECK(r.placement_version == 0);
    CHECK(r.resident.empty());
    auto [status, health] = node->get("/health");
    CHECK(status == 503);  // attached, but no placement yet
    CHECK(health["reason"].get<std::string>().find("no placement") != std::string::npos);
  }

  // Placement v1: half the experts on each node.
  proto::PlacementPrepare v1;
  v1.version = 1;
  for (const char* id : {"a", "b"}) {
    NodePlacement n{id, registered[id].expert_endpoint, {{"cpu", {}}}};
    for (int32_t l : layers) {
      for (int32_t e = 0; e < 8; ++e) {
        if ((e < 4) == (std::string(id) == "a")) {
          n.devices[0].experts.push_back({static_cast<uint16_t>(l), static_cast<uint16_t>(e)});
        }
      }
    }
    v1.nodes.push_back(n);
  }
  for (const char* id : {"a", "b"}) scheduler->send(id, v1);
  for (int i = 0; i < 2; ++i) {
    auto ready = scheduler->expect<proto::Ready>(10s);
    REQUIRE(ready);
    CHECK(ready->second.version == 1);
  }
  std::map<std::string, uint64_t> commit_seq;
  for (const char* id : {"a", "b"}) commit_seq[id] = scheduler->send(id, proto::Commit{1});
  for (int i = 0; i < 2; ++i) {
    auto ack = scheduler->expect<proto::Ack>(10s);
    REQUIRE(ack);
    CHECK(ack->second.sequence == commit_seq[ack->first.from]);
  }
  for (auto& [id, node] : nodes) {
    CHECK(node->get("/health").first == 200);
    const json out = node->generate(greedy_request(random_prompt(8, id == "a" ? 1 : 2), 24));
    CHECK(out["activations"]["remote"].get<int64_t>() > 0);
  }
  // Reports arrive (200 ms windows) and are acked: wait until they account
  // for everything the nodes served (a loaded machine may take a while).
  CHECK(scheduler->pump_until(
      [&] {
        for (auto& [id, node] : nodes) {
          const uint64_t served =
              node->stats()["activations"]["since_version"]["activations"].get<uint64_t>();
          if (reported_activations(*scheduler, id) != served) return false;
        }
        return true;
      },
      20s));

  // Local-hit ratio: the node's own count equals what the scheduler computes
  // from the reported counts and the placement, window by window.
  for (const NodePlacement& placement : v1.nodes) {
    const std::string id = placement.node_id;
    uint64_t activations = 0, hits = 0;
    REQUIRE_FALSE(scheduler->reports[id].empty());
    for (const auto& [seq, r] : scheduler->reports[id]) {
      CHECK(r.placement_version == 1);
      CHECK(r.local_hits == scheduler_local_hits(r, placement));
      activations += total_count(r);
      hits += r.local_hits;
    }
    const json s = nodes[id]->stats();
    CHECK(activations == s["activations"]["since_version"]["activations"].get<uint64_t>());
    CHECK(hits == s["activations"]["since_version"]["local"].get<uint64_t>());
    MESSAGE("node " << id << ": local-hit ratio " << static_cast<double>(hits) / activations
                    << " from its reports (scheduler's computation), "
                    << s["activations"]["since_version"]["local_hit_ratio"].get<double>()
                    << " from its own counters");
  }

  // The scheduler goes away: the nodes keep serving on v1 and keep their reports.
  std::map<std::string, size_t> reports_before;
  std::map<std::string, uint64_t> activations_before;
  for (const char* id : {"a", "b"}) {
    reports_before[id] = scheduler->reports[id].size();
    activations_before[id] = reported_activations(*scheduler, id);
  }
  scheduler.reset();
  for (auto& [id, node] : nodes) {  // each notices on its own heartbeat
    for (int i = 0; i < 500 && node->stats()["scheduler"]["attached"].get<bool>(); ++i) {
      std::this_thread::sleep_for(20ms);
    }
    CHECK_FALSE(node->stats()["scheduler"]["attached"].get<bool>());
  }
  for (auto& [id, node] : nodes) {
    // Unhealthy while detached, but still answering prompts.
    const auto [code, health] = node->get("/health");
    CHECK(code == 503);
    CHECK(health.dump().find("still answering prompts on placement v1") != std::string::npos);
    CHECK(node->generate(greedy_request(random_prompt(8, 7), 16))["tokens"].size() == 16);
  }
  // Windows close while nobody listens: reports wait in the node.
  for (int i = 0; i < 250 && nodes["a"]->stats()["scheduler"]["reports_pending"].get<int64_t>() < 1;
       ++i) {
    std::this_thread::sleep_for(20ms);
  }
  CHECK(nodes["a"]->stats()["scheduler"]["reports_pending"].get<int64_t>() >= 1);

  // Back on the same port: the nodes register again, saying what they serve,
  // and deliver the reports buffered meanwhile.
  scheduler = std::make_unique<ScriptedScheduler>(context, endpoint_of(port), &keys);
  scheduler->cluster_id = "lab";
  for (const char* id : {"a", "b"}) scheduler->admit(id, keys.pair(id).public_key);
  std::map<std::string, proto::Register> again;
  while (again.size() < 2) {
    auto reg = scheduler->expect<proto::Register>(20s);
    REQUIRE(reg);
    again[reg->first.from] = reg->second;
    scheduler->send(reg->first.from, proto::RegisterReply{true, "", 100, 60000, 1});
    scheduler->send_members(reg->first.from);
  }
  CHECK(again["a"].placement_version == 1);
  CHECK(again["a"].resident.size() == 4 * layers.size());
  // The buffered reports are delivered; wait until none is pending and they
  // account for everything served (bounded, for a loaded machine).
  CHECK(scheduler->pump_until(
      [&] {
        for (auto& [id, node] : nodes) {
          const json s = node->stats();
          if (s["scheduler"]["reports_pending"].get<int64_t>() != 0) return false;
          if (activations_before[id] + reported_activations(*scheduler, id) !=
              s["activations"]["total"]["activations"].get<uint64_t>()) {
            return false;
          }
        }
        return true;
      },
      20s));
  for (auto& [id, node] : nodes) {
    CHECK(scheduler->reports[id].size() >= 1);
    const json s = node->stats();
    CHECK(s["scheduler"]["registrations"].get<int64_t>() == 2);
    CHECK(s["scheduler"]["reports_pending"].get<int64_t>() == 0);
    CHECK(s["scheduler"]["reports_dropped"].get<int64_t>() == 0);
    // No report lost and none counted twice: before + after = everything the node served.
    CHECK(activations_before[id] + reported_activations(*scheduler, id) ==
          s["activations"]["total"]["activations"].get<uint64_t>());
    MESSAGE("node " << id << ": " << reports_before.at(id) << " reports before the outage, "
                    << scheduler->reports[id].size() << " delivered after re-attaching");
  }
}

TEST_CASE("node protocol: a node refused by the scheduler exits with code 2 and the reason") {
  TempDir work("node_refused");
  const std::filesystem::path model = work.path() / "tiny";
  write_model(SyntheticModelSpec{}, model);
  zmq::context_t context;
  const int port = free_tcp_port();
  ClusterKeys keys(work.path() / "keys");
  ScriptedScheduler scheduler(context, endpoint_of(port), &keys);
  scheduler.admit("a", keys.pair("a").public_key);
  std::vector<std::string> args = {
      "--model",           model.string(), "--scheduler", endpoint_of(port), "--experts",
      "tcp://127.0.0.1:*", "--http",       "127.0.0.1:0", "--threads",       "1"};
  for (const std::string& a : keys.node_args("a")) args.push_back(a);
  NodeProcess node(work.path(), "a", args);
  auto reg = scheduler.expect<proto::Register>(20s);
  REQUIRE(reg);
  scheduler.send(
      "a",
      proto::RegisterReply{
          false, "model id " + reg->second.model_id + " differs from the cluster's 1234", 0, 0, 0});
  const std::optional<int> code = node.process().wait(10s);
  REQUIRE(code.has_value());
  CHECK(*code == 2);
  CHECK(node.process().log().find("differs from the cluster's 1234") != std::string::npos);
}

}  // namespace dancemoe::testing
