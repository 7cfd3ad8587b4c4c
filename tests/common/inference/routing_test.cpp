#include "common/inference/routing.h"

#include <doctest/doctest.h>

#include <cmath>

namespace dancemoe {
namespace {

ModelConfig router_config(RouterScoring scoring, bool norm_topk, int64_t k) {
  ModelConfig c;
  c.n_experts = 4;
  c.n_experts_per_token = k;
  c.router_scoring = scoring;
  c.norm_topk_prob = norm_topk;
  return c;
}

}  // namespace

TEST_CASE("routing: softmax over all experts, then top-k, optionally renormalised") {
  const float logits[] = {0.0f, 1.0f, 3.0f, 2.0f};
  const double z = 1 + std::exp(1.0) + std::exp(3.0) + std::exp(2.0);
  RoutingDecision d;
  route_tokens(router_config(RouterScoring::kSoftmaxThenTopK, false, 2), logits, 1, &d);
  CHECK(d.expert(0, 0) == 2);
  CHECK(d.expert(0, 1) == 3);
  CHECK(d.weight(0, 0) == doctest::Approx(std::exp(3.0) / z));
  CHECK(d.weight(0, 1) == doctest::Approx(std::exp(2.0) / z));

  route_tokens(router_config(RouterScoring::kSoftmaxThenTopK, true, 2), logits, 1, &d);
  CHECK(d.weight(0, 0) + d.weight(0, 1) == doctest::Approx(1.0));
  CHECK(d.weight(0, 0) == doctest::Approx(std::exp(3.0) / (std::exp(3.0) + std::exp(2.0))));
}

TEST_CASE("routing: Mixtral order (top-k logits, then softmax) equals renormalised softmax") {
  const float logits[] = {0.5f, -1.0f, 2.0f, 1.5f, 0.0f, 0.1f, 0.2f, 3.0f};
  RoutingDecision mixtral, renormalised;
  route_tokens(router_config(RouterScoring::kTopKThenSoftmax, true, 2), logits, 2, &mixtral);
  route_tokens(router_config(RouterScoring::kSoftmaxThenTopK, true, 2), logits, 2, &renormalised);
  REQUIRE(mixtral.expert_ids == renormalised.expert_ids);
  for (size_t i = 0; i < mixtral.weights.size(); ++i) {
    CHECK(mixtral.weights[i] == doctest::Approx(renormalised.weights[i]));
  }
  CHECK(mixtral.expert(1, 0) == 3);  // token 1's logits are the second row
}

TEST_CASE("routing: ties go to the lower expert index") {
  const float logits[] = {1.0f, 2.0f, 2.0f, 2.0f};
  RoutingDecision d;
  route_tokens(router_config(RouterScoring::kSoftmaxThenTopK, false, 2), logits, 1, &d);
  CHECK(d.expert(0, 0) == 1);
  CHECK(d.expert(0, 1) == 2);
}

}  // namespace dancemoe

namespace dancemoe {

TEST_CASE("routing: sigmoid scores, the choice bias steers the choice but not the weights") {
  ModelConfig c;
  c.n_experts = 4;
  c.n_experts_per_token = 2;
  c.router_scoring = RouterScoring::kSigmoid;
  const float logits[] = {2.0f, 1.0f, 0.0f, -1.0f};
  const float bias[] = {0.0f, 0.0f, 0.5f, 0.0f};
  auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  RoutingDecision d;
  route_tokens(c, logits, 1, nullptr, &d);
  CHECK(d.expert(0, 0) == 0);
  CHECK(d.expert(0, 1) == 1);
  CHECK(d.weight(0, 1) == doctest::Approx(sigmoid(1.0)));
  // sigmoid(0) + 0.5 = 1.0 > sigmoid(1) = 0.73: expert 2 is chosen, with its own score.
  route_tokens(c, logits, 1, bias, &d);
  CHECK(d.expert(0, 0) == 2);
  CHECK(d.expert(0, 1) == 0);
  CHECK(d.weight(0, 0) == doctest::Approx(sigmoid(0.0)));
  c.norm_topk_prob = true;
  c.routed_scaling_factor = 2.5;
  route_tokens(c, logits, 1, bias, &d);
  CHECK(d.weight(0, 0) + d.weight(0, 1) == doctest::Approx(2.5));
}

TEST_CASE("routing: the group-limited choice keeps only the best groups' experts") {
  ModelConfig c;
  c.n_experts = 8;
  c.n_experts_per_token = 2;
  c.n_group = 4;  // groups {0,1} {2,3} {4,5} {6,7}
  c.topk_group = 1;
  c.router_scoring = RouterScoring::kSoftmaxThenTopK;
  c.group_score = GroupScore::kMax;
  // Group 3 holds the single best expert (7); group 1 the best pair.
  const float logits[] = {0.0f, 0.0f, 2.5f, 2.5f, 0.0f, 0.0f, 0.0f, 3.0f};
  RoutingDecision d;
  route_tokens(c, logits, 1, nullptr, &d);
  CHECK(d.expert(0, 0) == 7);  // best group by its best expert: group 3 -> experts 7, then 6
  CHECK(d.expert(0, 1) == 6);
  c.group_score = GroupScore::kTop2Sum;
  c.router_scoring = RouterScoring::kSigmoid;
  route_tokens(c, logits, 1, nullptr, &d);
  CHECK(d.expert(0, 0) == 2);  // best group by its two best: group 1 -> experts 2, 3
  CHECK(d.expert(0, 1) == 3);
}

TEST_CASE("routing: routed_scaling_factor multiplies the chosen weights") {
  ModelConfig c;
  c.n_experts = 4;
  c.n_experts_per_token = 2;
  c.routed_scaling_factor = 16.0;
  const float logits[] = {0.0f, 1.0f, 3.0f, 2.0f};
  const double z = 1 + std::exp(1.0) + std::exp(3.0) + std::exp(2.0);
  RoutingDecision d;
  route_tokens(c, logits, 1, &d);
  CHECK(d.weight(0, 0) == doctest::Approx(16.0 * std::exp(3.0) / z));
}

}  // namespace dancemoe
