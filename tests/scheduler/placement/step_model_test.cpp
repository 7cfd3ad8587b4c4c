// The latency model's fully-local estimates (scheduler/placement/step_model.h):
// hand-worked values, the exact case and the bounds that hold for any routing.
#include "scheduler/placement/step_model.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

namespace dancemoe::placement {
namespace {

// One node, one layer of `tokens` (each a set of expert ids): the statistics
// as the policies see them, with the given pairs listed.
LayerSteps steps_of(int32_t n_experts, int32_t k, const std::vector<std::vector<int32_t>>& tokens,
                    bool with_pairs) {
  Problem p;
  p.model = ModelShape({LayerShape{n_experts, 1}});
  p.cluster.nodes.push_back(Node{"n", 0.001, {Device{"d", static_cast<uint64_t>(n_experts), 1.0}}});
  p.activations.counts.assign(1, std::vector<double>(n_experts, 0.0));
  p.activations.experts_per_token = k;
  p.activations.pairs.resize(1);
  std::vector<std::vector<double>> together(n_experts, std::vector<double>(n_experts, 0.0));
  for (const auto& t : tokens) {
    for (size_t i = 0; i < t.size(); ++i) {
      p.activations.counts[0][t[i]] += 1;
      for (size_t j = i + 1; j < t.size(); ++j) {
        together[std::min(t[i], t[j])][std::max(t[i], t[j])] += 1;
      }
    }
  }
  if (with_pairs) {
    for (int32_t a = 0; a < n_experts; ++a) {
      for (int32_t b = a + 1; b < n_experts; ++b) {
        if (together[a][b] > 0) p.activations.pairs[0].push_back({a, b, together[a][b]});
      }
    }
  }
  Result<StepModel> model = StepModel::create(p);
  REQUIRE(model.is_ok());
  return model->at(0, 0);
}

double exact_share(const std::vector<std::vector<int32_t>>& tokens,
                   const std::vector<uint8_t>& held) {
  int64_t local = 0;
  for (const auto& t : tokens) {
    bool all = true;
    for (int32_t e : t) all = all && held[e];
    local += all ? 1 : 0;
  }
  return static_cast<double>(local) / static_cast<double>(tokens.size());
}

double choose(int n, int k) {
  double c = 1.0;
  for (int i = 0; i < k; ++i) c = c * (n - i) / (i + 1);
  return c;
}

}  // namespace

TEST_CASE("step model: the sequential estimate is exact for uniform routing") {
  // E experts equally used, top-k, S of size s: C(s, k) / C(E, k).
  for (const auto& [e, k] : {std::pair{8, 2}, std::pair{64, 8}, std::pair{16, 4}}) {
    for (int s = k; s <= e; s += 3) {
      const double w = 1.0 / e;
      const double inside = s * w;
      const double square = s * w * w;
      CAPTURE(e);
      CAPTURE(k);
      CAPTURE(s);
      CHECK(sequential_estimate(inside, square, k) == doctest::Approx(choose(s, k) / choose(e, k)));
    }
  }
  CHECK(sequential_estimate(0.0, 0.0, 2) == 0.0);
}

TEST_CASE("step model: two experts always routed together -- the pair bound finds it (hand)") {
  // Four experts, top-2, 100 tokens: 50 pick {0, 1}, 50 pick {2, 3}. Holding
  // {0, 1} keeps exactly half of the steps local. From the counts alone the
  // sequential estimate says 1/6 (w = 1/4 each: m = 1/2, a = 1/4,
  // m (m - a) / (1 - a)); the pair lower bound with c_23 = 50 says
  // 1 - (50 + 50) / 100 + 50 / 100 = 1/2; the upper bound min q_e =
  // (100 - 50 + 1/2) / 101 is 1/2 too.
  std::vector<std::vector<int32_t>> tokens;
  for (int i = 0; i < 50; ++i) tokens.push_back({0, 1});
  for (int i = 0; i < 50; ++i) tokens.push_back({2, 3});
  const std::vector<uint8_t> held = {1, 1, 0, 0};
  const LayerSteps without = steps_of(4, 2, tokens, false);
  const LayerSteps with = steps_of(4, 2, tokens, true);
  CHECK(without.steps == doctest::Approx(100.0));
  CHECK(without.fully_local(held) == doctest::Approx(1.0 / 6.0));
  CHECK(with.pair_lower_bound(held) == doctest::Approx(0.5));
  CHECK(with.fully_local(held) == doctest::Approx(0.5));
  CHECK(with.fully_local(held) == doctest::Approx(exact_share(tokens, held)));
  // Everything held: every step local; nothing held: none.
  CHECK(with.fully_local(std::vector<uint8_t>{1, 1, 1, 1}) == 1.0);
  CHECK(with.fully_local(std::vector<uint8_t>{0, 0, 0, 0}) == doctest::Approx(0.0).epsilon(0.01));
}

TEST_CASE("step model: the estimate stays within the bounds that hold for any routing") {
  // Random skewed routings and random sets: max(0, 1 - sum_out f_e / T) <=
  // F <= min_out q_e for the estimate, and the exact share obeys the same
  // bounds (up to the half-step smoothing of q).
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    const int32_t n = 16, k = 4;
    std::vector<double> weight(n);
    for (int32_t e = 0; e < n; ++e) weight[e] = std::pow(1.0 + e, -1.0 - 0.1 * (trial % 10));
    std::discrete_distribution<int32_t> pick(weight.begin(), weight.end());
    std::vector<std::vector<int32_t>> tokens(200);
    for (auto& t : tokens) {
      std::vector<uint8_t> seen(n, 0);
      while (static_cast<int32_t>(t.size()) < k) {
        const int32_t e = pick(rng);
        if (!seen[e]) {
          seen[e] = 1;
          t.push_back(e);
        }
      }
    }
    const LayerSteps s = steps_of(n, k, tokens, trial % 2 == 0);
    std::vector<uint8_t> held(n, 0);
    for (int32_t e = 0; e < n; ++e) held[e] = rng() % 3 != 0;
    double outside_use = 0.0, upper = 1.0;
    for (int32_t e = 0; e < n; ++e) {
      if (held[e]) continue;
      outside_use += s.use[e];
      upper = std::min(upper, std::exp(s.log_q[e]));
    }
    const double lower = std::max(0.0, 1.0 - outside_use);
    const double f = s.fully_local(held);
    CAPTURE(trial);
    CHECK(f >= std::min(lower, upper) - 1e-12);
    CHECK(f <= upper + 1e-12);
    const double exact = exact_share(tokens, held);
    CHECK(exact >= lower - 1e-12);
    CHECK(exact <= upper + 0.5 / tokens.size() + 1e-12);
    // The pair bound is a true lower bound of the exact share.
    CHECK(s.pair_lower_bound(held) <= exact + 1e-9);
  }
}

}  // namespace dancemoe::placement
