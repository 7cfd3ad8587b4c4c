// Collaborative inference with real processes on 127.0.0.1 (issue 5,
// "Equivalence"): three standalone nodes, each holding about half of the
// experts (coverage complete, no node complete), answer prompts sent to any
// of them as one node holding every expert would.
#include "tests/integration/node_cluster.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

namespace dancemoe::testing {
namespace {

constexpr int kTokens = 64;

struct Cluster {
  Cluster(const std::string& preset, const std::string& wire) : work("node_cluster") {
    model = work.path() / preset;
    SyntheticModelSpec spec;
    spec.preset = preset;
    write_model(spec, model);
    std::ifstream in(model / "config.json");
    const json config = json::parse(in);
    n_experts = config["num_experts"].get<int32_t>();
    vocab = config["vocab_size"].get<int32_t>();
    const std::vector<int32_t> layers = moe_layers_of(model);

    // a: [0, E/2), b: [E/4, 3E/4), c: [E/2, E) -- shifted per layer.
    PlacementSpec spec3;
    spec3.layer_shift = 3;
    const int32_t e = n_experts;
    for (int32_t x = 0; x < e / 2; ++x) {
      spec3.experts["a"].push_back(x);
      spec3.experts["b"].push_back(e / 4 + x);
      spec3.experts["c"].push_back(e / 2 + x);
    }
    std::map<std::string, int> ports;
    std::map<std::string, std::string> endpoints;
    for (const char* id : {"a", "b", "c", "all"}) {
      ports[id] = free_tcp_port();
      endpoints[id] = endpoint_of(ports[id]);
    }
    write_json(work.path() / "cluster.json", placement_json(spec3, layers, e, endpoints));
    PlacementSpec single;
    for (int32_t x = 0; x < e; ++x) single.experts["all"].push_back(x);
    write_json(work.path() / "single.json", placement_json(single, layers, e, endpoints));

    const std::vector<std::string> common = {"--precision", "f32", "--wire-dtype", wire};
    for (const char* id : {"a", "b", "c"}) {
      std::vector<std::string> extra = common;
      extra.insert(extra.end(), {"--placement", (work.path() / "cluster.json").string()});
      nodes.push_back(
          std::make_unique<NodeProcess>(work.path(), id, node_args(model, ports[id], extra)));
    }
    std::vector<std::string> extra = common;
    extra.insert(extra.end(), {"--placement", (work.path() / "single.json").string()});
    reference =
        std::make_unique<NodeProcess>(work.path(), "all", node_args(model, ports["all"], extra));
    for (auto& n : nodes) REQUIRE(n->wait_ready());
    REQUIRE(reference->wait_ready());
  }

  std::vector<int32_t> prompt(uint32_t seed, int n) const {
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
  std::vector<std::unique_ptr<NodeProcess>> nodes;
  std::unique_ptr<NodeProcess> reference;
};

void f32_cluster_equals_one_node(const std::string& preset) {
  Cluster c(preset, "f32");
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    // Each node gets prompts of its own (and the others' too).
    for (uint32_t seed : {11u, 22u, 33u}) {
      const std::vector<int32_t> p = c.prompt(seed + static_cast<uint32_t>(i), 12);
      const json want = c.reference->generate(greedy_request(p, kTokens, false));
      const json got = c.nodes[i]->generate(greedy_request(p, kTokens, false));
      CAPTURE(c.nodes[i]->id());
      CAPTURE(seed);
      REQUIRE(got["tokens"].size() == static_cast<size_t>(kTokens));
      CHECK(got["tokens"] == want["tokens"]);
      CHECK(got["activations"]["remote"].get<int64_t>() > 0);
      CHECK(got["activations"]["local"].get<int64_t>() > 0);
      CHECK(got["activations"]["offloaded"].get<int64_t>() == 0);
      CHECK(want["activations"]["remote"].get<int64_t>() == 0);
    }
    const json s = c.nodes[i]->stats();
    MESSAGE(preset << " node " << c.nodes[i]->id() << ": local-hit ratio "
                   << s["activations"]["total"]["local_hit_ratio"].get<double>() << " over "
                   << s["activations"]["total"]["activations"].get<int64_t>()
                   << " activations, remote calls "
                   << s["activations"]["total"]["remote_calls"].get<int64_t>());
  }
}

void bf16_wire_agreement(const std::string& preset) {
  Cluster c(preset, "bf16");
  int positions = 0, agree = 0, free_agree = 0;
  double max_logit_diff = 0;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const std::vector<int32_t> p = c.prompt(100 + static_cast<uint32_t>(i), 12);
    const json want = c.reference->generate(greedy_request(p, kTokens, true));
    const std::vector<int32_t> want_tokens = want["tokens"].get<std::vector<int32_t>>();
    const json free_run = c.nodes[i]->generate(greedy_request(p, kTokens, false));
    const std::vector<int32_t> free_tokens = free_run["tokens"].get<std::vector<int32_t>>();
    for (int k = 0; k < kTokens; ++k)
      free_agree += free_tokens[static_cast<size_t>(k)] == want_tokens[static_cast<size_t>(k)];
    // Teacher forcing: the same prefix as the reference at every position.
    for (int k = 0; k < kTokens; ++k) {
      std::vector<int32_t> prefix = p;
      prefix.insert(prefix.end(), want_tokens.begin(), want_tokens.begin() + k);
      const json got = c.nodes[i]->generate(greedy_request(prefix, 1, true));
      const std::vector<float> row = got["logits"][0].get<std::vector<float>>();
      const std::vector<float> ref =
          want["logits"][static_cast<size_t>(k)].get<std::vector<float>>();
      for (size_t v = 0; v < row.size(); ++v) {
        max_logit_diff = std::max(max_logit_diff, static_cast<double>(std::fabs(row[v] - ref[v])));
      }
      ++positions;
      agree += got["tokens"][0].get<int32_t>() == want_tokens[static_cast<size_t>(k)];
    }
  }
  const double ratio = static_cast<double>(agree) / positions;
  MESSAGE(preset << ", bf16 on the wire vs one node (f32 compute): greedy tokens agree at " << agree
                 << "/" << positions << " positions (" << 100 * ratio
                 << " %) given the same prefix; free-running " << free_agree << "/" << positions
                 << "; max |logit difference| " << max_logit_diff);
  CHECK(ratio >= 0.95);
  CHECK(max_logit_diff > 0);  // bf16 does round something
}

}  // namespace

TEST_CASE("node cluster: tiny model, 3 nodes with half the experts each equal one node over f32") {
  f32_cluster_equals_one_node("tiny");
}

TEST_CASE("node cluster: small model, 3 nodes with half the experts each equal one node over f32") {
  f32_cluster_equals_one_node("small");
}

TEST_CASE(
    "node cluster: tiny model, bf16 on the wire agrees with one node on 95 percent of tokens") {
  bf16_wire_agreement("tiny");
}

TEST_CASE(
    "node cluster: small model, bf16 on the wire agrees with one node on 95 percent of tokens") {
  bf16_wire_agreement("small");
}

}  // namespace dancemoe::testing
