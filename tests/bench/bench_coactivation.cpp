// Co-activation on the shared OLMoE trace (issue 17; the numbers quoted in
// scheduler/placement/step_model.h and docs/placement-latency.md):
//   1. how well the fully-local estimates of step_model.h predict the exact
//      share F(S) of a domain's steps whose 8 experts all lie in S, for
//      random sets S of 16-56 of a layer's 64 experts near its most used;
//   2. which set of s experts keeps most steps local on held-out prompts:
//      the most used experts, or the co-activation chain of
//      policies/latency.h (with the pairs a node reports, or with all pairs).
// Per domain and layer, the first half of the prompts gives the statistics,
// the second half is held out.
//
//   build/release/tests/bench_coactivation [--trace
//   ../shared/traces/olmoe_1b7b_domains/tokens_sample.csv]
//                                          [--pairs 128]
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "common/placement/coactivation.h"
#include "common/placement/routing_trace.h"
#include "scheduler/placement/policies/latency.h"
#include "scheduler/placement/step_model.h"

using namespace dancemoe;
using namespace dancemoe::placement;

namespace {

constexpr int32_t kExperts = 64;

// The tokens of one domain at one layer: each a set of expert ids.
using Tokens = std::vector<std::vector<int32_t>>;

double exact_share(const Tokens& tokens, const std::vector<uint8_t>& held) {
  int64_t local = 0;
  for (const auto& t : tokens) {
    bool all = true;
    for (int32_t e : t) all = all && held[e];
    local += all ? 1 : 0;
  }
  return tokens.empty() ? 0 : static_cast<double>(local) / tokens.size();
}

// One node, one layer: the statistics as the policies see them.
LayerSteps steps_of(const Tokens& tokens, int32_t k, int32_t pairs_per_layer) {
  CoActivationCounter counter({kExperts});
  for (const auto& t : tokens) counter.add_token(0, t);
  Problem p;
  p.model = ModelShape({LayerShape{kExperts, 1}});
  p.cluster.nodes.push_back(Node{"n", 0.001, {Device{"d", kExperts, 1.0}}});
  p.activations.counts.assign(1, std::vector<double>(kExperts, 0.0));
  for (int32_t e = 0; e < kExperts; ++e) p.activations.counts[0][e] = counter.uses(0, e);
  p.activations.experts_per_token = k;
  p.activations.pairs.resize(1);
  for (const CoActivationCounter::Pair& pair : counter.top_pairs(pairs_per_layer)) {
    p.activations.pairs[0].push_back({pair.a, pair.b, static_cast<double>(pair.count)});
  }
  return StepModel::create(p)->at(0, 0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path =
      std::string(DMOE_SOURCE_DIR) + "/../shared/traces/olmoe_1b7b_domains/tokens_sample.csv";
  int32_t reported = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--trace")
      path = argv[i + 1];
    else if (a == "--pairs")
      reported = std::stoi(argv[i + 1]);
  }
  Result<RoutingTrace> trace = read_routing_trace(path);
  if (!trace.is_ok()) {
    std::fprintf(stderr, "%s\n", trace.status().to_string().c_str());
    return 1;
  }
  const RoutingTrace& t = *trace;
  std::mt19937 rng(1);
  // Estimator errors: sum |est - exact| and sum (est - exact) per estimator.
  const char* estimators[] = {"independent", "sequential (values)", "pairs, every pair",
                              "pairs, as reported"};
  double abs_err[4] = {0, 0, 0, 0}, bias[4] = {0, 0, 0, 0};
  int64_t n_sets = 0;
  const std::vector<int32_t> sizes = {16, 24, 32, 40, 48, 56};
  std::map<int32_t, std::array<double, 4>> held_out;  // size -> popularity, reported, all, oracle
  int64_t n_layers_seen = 0;
  for (size_t o = 0; o < t.origins.size(); ++o) {
    std::vector<const TraceRequest*> requests;
    for (const TraceRequest& r : t.requests) {
      if (r.origin == static_cast<int32_t>(o)) requests.push_back(&r);
    }
    const size_t half = requests.size() / 2;
    for (int32_t l = 0; l < t.n_layers; ++l) {
      Tokens calibration, evaluation;
      for (size_t i = 0; i < requests.size(); ++i) {
        for (int32_t tok = 0; tok < requests[i]->n_tokens; ++tok) {
          std::vector<int32_t> ids;
          for (int32_t j = 0; j < t.top_k; ++j) {
            ids.push_back(
                requests[i]->experts[(static_cast<size_t>(tok) * t.n_layers + l) * t.top_k + j]);
          }
          (i < half ? calibration : evaluation).push_back(std::move(ids));
        }
      }
      const LayerSteps all = steps_of(calibration, t.top_k, kExperts * kExperts);
      const LayerSteps listed = steps_of(calibration, t.top_k, reported);
      const LayerSteps none = steps_of(calibration, t.top_k, 0);
      // 1. Estimates on random sets near the most used experts.
      std::vector<int32_t> by_use(kExperts);
      for (int32_t e = 0; e < kExperts; ++e) by_use[e] = e;
      for (int32_t s : sizes) {
        for (int rep = 0; rep < 2; ++rep) {
          std::vector<std::pair<double, int32_t>> noisy;
          std::normal_distribution<double> noise(0.0, 0.15);
          for (int32_t e = 0; e < kExperts; ++e) noisy.push_back({all.use[e] + noise(rng), e});
          std::sort(noisy.rbegin(), noisy.rend());
          std::vector<uint8_t> held(kExperts, 0);
          for (int32_t i = 0; i < s; ++i) held[noisy[i].second] = 1;
          const double exact = exact_share(calibration, held);
          double q = 1.0;
          for (int32_t e = 0; e < kExperts; ++e) q *= held[e] ? 1.0 : std::exp(all.log_q[e]);
          const double est[4] = {q, none.fully_local(held),
                                 std::min(1.0, all.coactivation_estimate(held)),
                                 std::min(1.0, listed.coactivation_estimate(held))};
          for (int i = 0; i < 4; ++i) {
            abs_err[i] += std::abs(est[i] - exact);
            bias[i] += est[i] - exact;
          }
          ++n_sets;
        }
      }
      // 2. Chains, scored on the held-out half.
      const std::vector<double> no_load(kExperts, 0.0);
      const LayerChain by_pairs_listed = build_chain(listed, {1.0, 0.0, no_load});
      const LayerChain by_pairs_all = build_chain(all, {1.0, 0.0, no_load});
      std::stable_sort(by_use.begin(), by_use.end(),
                       [&](int32_t a, int32_t b) { return all.use[a] > all.use[b]; });
      for (int32_t s : sizes) {
        std::array<double, 4>& row = held_out[s];
        const std::vector<int32_t>* orders[3] = {&by_use, &by_pairs_listed.order,
                                                 &by_pairs_all.order};
        for (int i = 0; i < 3; ++i) {
          std::vector<uint8_t> held(kExperts, 0);
          for (int32_t j = 0; j < s; ++j) held[(*orders[i])[j]] = 1;
          row[i] += exact_share(evaluation, held);
        }
      }
      ++n_layers_seen;
    }
  }
  std::printf("fully-local share F(S), %lld sets (16-56 of 64 experts near the most used)\n",
              static_cast<long long>(n_sets));
  std::printf("%-22s %14s %10s\n", "estimate", "mean |error|", "mean bias");
  for (int i = 0; i < 4; ++i) {
    std::printf("%-22s %14.4f %+10.4f\n", estimators[i], abs_err[i] / n_sets, bias[i] / n_sets);
  }
  std::printf(
      "\nheld-out fully-local share of the s experts a chain keeps (%lld domain-layers; "
      "pairs reported: %d per layer)\n",
      static_cast<long long>(n_layers_seen), reported);
  std::printf("%4s %16s %22s %18s\n", "s", "most used", "co-activation (reported)",
              "co-activation (all)");
  for (const auto& [s, row] : held_out) {
    std::printf("%4d %16.4f %22.4f %18.4f\n", s, row[0] / n_layers_seen, row[1] / n_layers_seen,
                row[2] / n_layers_seen);
  }
  return 0;
}
