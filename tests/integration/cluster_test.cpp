// The whole system on 127.0.0.1 (issue 5 with the real scheduler): the
// `dancemoe-scheduler` daemon and three `dancemoe-node` agents attached to
// it, no placement files. The scheduler gives the cold-start placement,
// nodes serve prompts together, report, and the scheduler's placement round
// moves experts to where they are used.
//
//  - equivalence: on a placement where each node holds about half of the
//    experts (coverage complete, no node complete), greedy output on every
//    node equals one node holding every expert, token for token, f32 wire
//    (Qwen3-MoE, and a DeepSeek-V2-Lite-shaped model with shared experts);
//  - the local-hit ratio each node computes from its own counters equals
//    what the scheduler computes from the reports it stored;
//  - adaptation: each node driven with prompts of its own domain, a round
//    adopted by the gate, a live migration, and every node's local-hit ratio
//    higher after it than before.
#include <doctest/doctest.h>

#include <random>

#include "tests/integration/node_cluster.h"
#include "tests/support/scheduler_process.h"

namespace dancemoe::testing {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kNodes = {"a", "b", "c"};

struct AttachedCluster {
  // Each node gets memory for `memory_fraction` of all experts.
  AttachedCluster(const std::string& preset, double memory_fraction,
                  std::vector<std::string> node_flags, int scheduler_port = 0,
                  const std::string& arch = "qwen3_moe")
      : work("cluster") {
    model = work.path() / preset;
    SyntheticModelSpec spec;
    spec.arch = arch;
    spec.preset = preset;
    write_model(spec, model);
    auto config = load_model_config(model);
    REQUIRE(config.is_ok());
    n_experts = static_cast<int32_t>(config->n_experts);
    vocab = static_cast<int32_t>(config->vocab_size);
    layers = moe_layers_of(model);

    scheduler = std::make_unique<SchedulerProcess>(
        DMOE_SCHEDULER_PATH, work.path(),
        std::vector<std::string>{"--model", model.string(), "--heartbeat-interval", "0.2",
                                 "--report-interval", "0.4", "--cold-start-settle", "0.5",
                                 "--prepare-timeout", "30", "--interval", "3600"},
        scheduler_port);
    scheduler->start();

    const uint64_t all_experts = total_expert_bytes();
    const auto memory = static_cast<uint64_t>(memory_fraction * static_cast<double>(all_experts));
    for (const std::string& id : kNodes) {
      std::vector<std::string> extra = {"--scheduler", scheduler->endpoint(), "--expert-memory",
                                        std::to_string(memory)};
      const std::vector<std::string> keys = scheduler->node_args(id);
      extra.insert(extra.end(), keys.begin(), keys.end());
      extra.insert(extra.end(), node_flags.begin(), node_flags.end());
      nodes[id] =
          std::make_unique<NodeProcess>(work.path(), id, node_args(model, free_tcp_port(), extra));
    }
    for (auto& [id, node] : nodes) REQUIRE(node->wait_ready());
    // The cold start: version 1 on every node.
    REQUIRE(wait_for_version(1));
  }

  uint64_t total_expert_bytes() const {
    auto checkpoint = Checkpoint::open(model);
    REQUIRE(checkpoint.is_ok());
    uint64_t total = 0;
    for (int32_t l : layers) {
      for (int32_t e = 0; e < n_experts; ++e) total += (*checkpoint)->expert_bytes(l, e);
    }
    return total;
  }

  // Every node serves `version` (its routing table) and the scheduler says so.
  bool wait_for_version(uint64_t version) {
    const bool ok = eventually(
        [&] {
          for (auto& [id, node] : nodes) {
            if (node->stats()["placement_version"].get<uint64_t>() != version) return false;
          }
          auto s = scheduler_query(*scheduler, "status");
          return s.is_ok() && !(*s)["placement"].is_null() &&
                 (*s)["placement"]["version"].get<uint64_t>() == version;
        },
        60s);
    if (!ok) MESSAGE("scheduler log:\n" << scheduler->log());
    return ok;
  }

  // Waits until every node's reports are stored (nothing pending after a
  // full report window) and returns the scheduler's status.
  json settled_status() {
    std::this_thread::sleep_for(1s);  // the current windows close and are sent
    REQUIRE(eventually(
        [&] {
          for (auto& [id, node] : nodes) {
            if (node->stats()["scheduler"]["reports_pending"].get<int64_t>() != 0) return false;
          }
          return true;
        },
        20s));
    auto s = scheduler_query(*scheduler, "status");
    REQUIRE(s.is_ok());
    return *s;
  }

  std::vector<int32_t> random_prompt(uint32_t seed, int n) const {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> id(3, vocab - 1);
    std::vector<int32_t> p(static_cast<size_t>(n));
    for (int32_t& t : p) t = id(rng);
    return p;
  }

  TempDir work;
  std::filesystem::path model;
  int32_t n_experts = 0;
  int32_t vocab = 0;
  std::vector<int32_t> layers;
  std::unique_ptr<SchedulerProcess> scheduler;
  std::map<std::string, std::unique_ptr<NodeProcess>> nodes;
};

// The scheduler's local-hit ratio of `id` since the committed placement.
double scheduler_hit_ratio(const json& status, const std::string& id) {
  for (const auto& n : status["nodes"]["list"]) {
    if (n["id"] == id) return n["local_hit_ratio_since_adoption"].get<double>();
  }
  FAIL("node " << id << " not in the scheduler's status");
  return 0;
}

// An operator placement: a [0, E/2), b [E/4, 3E/4), c [E/2, E), shifted per
// layer -- every expert on one or two nodes, no node with all of them.
json half_placement(const AttachedCluster& c) {
  json nodes = json::object();
  const int32_t e = c.n_experts;
  const std::map<std::string, int32_t> first = {{"a", 0}, {"b", e / 4}, {"c", e / 2}};
  for (const std::string& id : kNodes) {
    json experts = json::array();
    for (int32_t l : c.layers) {
      for (int32_t x = 0; x < e / 2; ++x) experts.push_back({l, (first.at(id) + x + 3 * l) % e});
    }
    nodes[id] = {{"devices", {{"cpu", experts}}}};
  }
  return {{"nodes", nodes}};
}

void attached_cluster_equals_one_node(const std::string& preset,
                                      const std::string& arch = "qwen3_moe") {
  AttachedCluster c(preset, 0.55, {"--precision", "f32", "--wire-dtype", "f32"}, 0, arch);
  auto applied = scheduler_query(*c.scheduler, "apply", {{"placement", half_placement(c)}});
  INFO((applied.is_ok() ? applied->dump() : applied.status().to_string()));
  REQUIRE(applied.is_ok());
  REQUIRE(c.wait_for_version(2));

  // One node holding every expert, standalone: the reference.
  const int port = free_tcp_port();
  PlacementSpec single;
  for (int32_t x = 0; x < c.n_experts; ++x) single.experts["all"].push_back(x);
  write_json(c.work.path() / "single.json",
             placement_json(single, c.layers, c.n_experts, {{"all", endpoint_of(port)}}));
  NodeProcess reference(c.work.path(), "all",
                        node_args(c.model, port,
                                  {"--precision", "f32", "--wire-dtype", "f32", "--placement",
                                   (c.work.path() / "single.json").string()}));
  REQUIRE(reference.wait_ready());

  for (size_t i = 0; i < kNodes.size(); ++i) {
    NodeProcess& node = *c.nodes[kNodes[i]];
    CAPTURE(node.id());
    CHECK(node.stats()["experts"]["local"].get<int64_t>() ==
          static_cast<int64_t>(c.layers.size()) * c.n_experts / 2);
    for (uint32_t seed : {7u, 8u}) {
      const std::vector<int32_t> p = c.random_prompt(seed + 10 * static_cast<uint32_t>(i), 12);
      const json want = reference.generate(greedy_request(p, 64));
      const json got = node.generate(greedy_request(p, 64));
      REQUIRE(got["tokens"].size() == 64);
      CHECK(got["tokens"] == want["tokens"]);
      CHECK(got["activations"]["remote"].get<int64_t>() > 0);
      CHECK(got["activations"]["local"].get<int64_t>() > 0);
    }
  }

  // Local-hit agreement: the node's counters and the scheduler's reports.
  const json status = c.settled_status();
  for (const std::string& id : kNodes) {
    const json since = c.nodes[id]->stats()["activations"]["since_version"];
    const double own = since["local_hit_ratio"].get<double>();
    const double scheduler = scheduler_hit_ratio(status, id);
    MESSAGE(preset << " node " << id << ": local-hit ratio " << own << " (node's counters), "
                   << scheduler << " (scheduler, from " << since["activations"]
                   << " stored activations)");
    CHECK(scheduler == doctest::Approx(own).epsilon(1e-12));
  }
}

void drive(AttachedCluster& c, int n_prompts) {
  for (size_t d = 0; d < kNodes.size(); ++d) {
    for (int i = 0; i < n_prompts; ++i) {
      c.nodes[kNodes[d]]->generate(
          greedy_request(domain_prompt(static_cast<int>(d), static_cast<uint32_t>(i)), 8));
    }
  }
}

}  // namespace

TEST_CASE("cluster: scheduler and three attached nodes answer as one node (tiny, f32 wire)") {
  attached_cluster_equals_one_node("tiny");
}

TEST_CASE("cluster: scheduler and three attached nodes answer as one node (small, f32 wire)") {
  attached_cluster_equals_one_node("small");
}

// DeepSeek-V2-Lite's layout: latent attention with its compressed cache, a
// leading dense layer and two shared experts per MoE layer -- all of it the
// dense part every node holds; only the routed experts are placed.
TEST_CASE("cluster: a DeepSeek-V2-Lite-shaped model on three nodes answers as one node (f32)") {
  attached_cluster_equals_one_node("small", "deepseek_v2");
}

TEST_CASE("cluster: the scheduler adopts a placement from the nodes' domains, local hits rise") {
  // Memory for 40 % of the experts per node: the cold start covers every
  // expert once, a third per node; a better placement replicates each
  // node's hot experts onto it.
  AttachedCluster c("small", 0.4, {});
  drive(c, 6);
  const json before = c.settled_status();
  std::map<std::string, double> hit_before;
  for (const std::string& id : kNodes) {
    hit_before[id] = c.nodes[id]->stats()["activations"]["since_version"]["local_hit_ratio"];
    CHECK(scheduler_hit_ratio(before, id) == doctest::Approx(hit_before[id]).epsilon(1e-12));
  }

  // `optimal` (local activations), not the default `latency`, which trades
  // local activations for fully-local steps (placement_runtime_test checks those).
  auto round = scheduler_query(*c.scheduler, "round", {{"policy", "optimal"}});
  REQUIRE(round.is_ok());
  INFO(round->dump());
  auto status = scheduler_query(*c.scheduler, "status");
  REQUIRE(status.is_ok());
  const json decision = (*status)["last_decision"];
  MESSAGE("placement round: " << decision.dump());
  REQUIRE(decision["adopt"].get<bool>());
  REQUIRE(c.wait_for_version(2));

  drive(c, 6);
  const json after = c.settled_status();
  for (const std::string& id : kNodes) {
    const double hit_after =
        c.nodes[id]->stats()["activations"]["since_version"]["local_hit_ratio"].get<double>();
    MESSAGE("node " << id << ": local-hit ratio " << hit_before[id] << " on the cold start -> "
                    << hit_after << " after the adopted placement (scheduler: "
                    << scheduler_hit_ratio(before, id) << " -> " << scheduler_hit_ratio(after, id)
                    << ")");
    CHECK(hit_after > hit_before[id] + 0.1);
    CHECK(scheduler_hit_ratio(after, id) == doctest::Approx(hit_after).epsilon(1e-12));
  }
}

TEST_CASE("cluster: nodes serve through a scheduler kill -9 and re-attach when it returns") {
  AttachedCluster c("tiny", 0.55, {}, free_tcp_port());
  const std::vector<int32_t> prompt = c.random_prompt(5, 8);
  std::map<std::string, json> before;  // bf16 wire: each node's own answer
  for (auto& [id, node] : c.nodes)
    before[id] = node->generate(greedy_request(prompt, 16))["tokens"];
  c.scheduler->kill();
  for (auto& [id, node] : c.nodes) {
    CHECK(node->generate(greedy_request(prompt, 16))["tokens"] == before[id]);
    CHECK(node->stats()["placement_version"].get<uint64_t>() == 1);
  }
  CHECK(eventually([&] { return c.nodes["a"]->get("/health").first == 503; }, 10s));
  c.scheduler->start();  // same port, same database
  REQUIRE(eventually(
      [&] {
        auto s = scheduler_query(*c.scheduler, "status");
        return s.is_ok() && (*s)["nodes"]["up"].get<int>() == 3;
      },
      30s));
  const json status = c.settled_status();
  CHECK(status["placement"]["version"].get<uint64_t>() == 1);
  for (auto& [id, node] : c.nodes) {
    const json s = node->stats()["scheduler"];
    CHECK(s["attached"].get<bool>());
    CHECK(node->get("/health").first == 200);
    CHECK(s["registrations"].get<int64_t>() >= 2);
    CHECK(s["reports_dropped"].get<int64_t>() == 0);
    CHECK(s["reports_refused"].get<int64_t>() == 0);
  }
  MESSAGE("after the restart: " << status["nodes"]["up"] << " nodes up on version "
                                << status["placement"]["version"]);
}

}  // namespace dancemoe::testing
