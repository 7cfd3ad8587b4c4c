// Helpers shared by the node's unit tests (header-only: the test suites
// compile only *_test.cpp files): a tiny synthetic model on disk, opened,
// with deterministic hidden states and routings to feed executors.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "common/inference/moe_executor.h"
#include "common/inference/routing.h"
#include "common/model/checkpoint.h"
#include "common/model/synthetic/synthetic_model.h"
#include "common/placement/placement_json.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

// (test_support, not testing: nested in dancemoe::node, a `testing` namespace
// would hide dancemoe::testing from the tests that use both.)
namespace dancemoe::node::test_support {

// A tiny qwen3_moe model (layers 0, 2, 3 are MoE with 8 experts, top-2;
// hidden 64) written to a fresh directory and opened.
struct TinyModel {
  explicit TinyModel(const std::string& preset = "tiny", uint64_t seed = 1) : dir("node_model") {
    SyntheticModelSpec spec;
    spec.preset = preset;
    spec.seed = seed;
    dancemoe::testing::write_model(spec, dir.path());
    auto opened = Checkpoint::open(dir.path());
    REQUIRE(opened.is_ok());
    checkpoint = std::move(opened).value();
  }
  const ModelConfig& config() const { return checkpoint->config(); }
  std::vector<int32_t> moe_layers() const {
    std::vector<int32_t> out;
    for (size_t l = 0; l < config().layer_is_moe.size(); ++l) {
      if (config().layer_is_moe[l]) out.push_back(static_cast<int32_t>(l));
    }
    return out;
  }

  dancemoe::testing::TempDir dir;
  std::unique_ptr<Checkpoint> checkpoint;
};

// Normalised-looking hidden states: [n_tokens, hidden], fixed seed.
inline std::vector<float> random_hidden(int64_t n_tokens, int64_t hidden, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_tokens * hidden));
  for (float& v : x) v = dist(rng);
  return x;
}

// A routing of n_tokens tokens to top_k distinct experts each, weights
// summing to 1, highest first; fixed seed.
inline RoutingDecision random_routing(int64_t n_tokens, int64_t top_k, int64_t n_experts,
                                      uint32_t seed) {
  std::mt19937 rng(seed);
  RoutingDecision r;
  r.n_tokens = n_tokens;
  r.top_k = top_k;
  for (int64_t t = 0; t < n_tokens; ++t) {
    std::vector<int32_t> ids(static_cast<size_t>(n_experts));
    for (int64_t e = 0; e < n_experts; ++e) ids[static_cast<size_t>(e)] = static_cast<int32_t>(e);
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<float> w(static_cast<size_t>(top_k));
    float sum = 0;
    for (float& v : w) sum += (v = 0.1f + std::uniform_real_distribution<float>(0, 1)(rng));
    std::sort(w.begin(), w.end(), std::greater<float>());
    for (int64_t k = 0; k < top_k; ++k) {
      r.expert_ids.push_back(ids[static_cast<size_t>(k)]);
      r.weights.push_back(w[static_cast<size_t>(k)] / sum);
    }
  }
  return r;
}

// A placement of `nodes` (id, endpoint, experts of every MoE layer).
inline ClusterPlacement make_placement(
    uint64_t version,
    const std::vector<std::tuple<std::string, std::string, std::vector<int32_t>>>& nodes,
    const std::vector<int32_t>& moe_layers) {
  ClusterPlacement p;
  p.version = version;
  for (const auto& [id, endpoint, experts] : nodes) {
    NodePlacement a{id, endpoint, {{"cpu", {}}}};
    for (int32_t l : moe_layers) {
      for (int32_t e : experts) a.devices[0].experts.push_back({l, e});
    }
    p.nodes.push_back(std::move(a));
  }
  std::sort(p.nodes.begin(), p.nodes.end(),
            [](const NodePlacement& a, const NodePlacement& b) { return a.node_id < b.node_id; });
  return p;
}

}  // namespace dancemoe::node::test_support
