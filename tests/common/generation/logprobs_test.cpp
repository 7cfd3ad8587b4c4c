#include "common/generation/logprobs.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace dancemoe {

TEST_CASE("logprobs: the log-softmax of the chosen token and the n most likely, sorted") {
  const std::vector<float> logits = {std::log(0.1f), std::log(0.6f), std::log(0.3f)};
  const TokenLogprobs lp = token_logprobs(logits, 2, 2);
  CHECK(lp.id == 2);
  CHECK(lp.logprob == doctest::Approx(std::log(0.3)));
  REQUIRE(lp.top.size() == 2);
  CHECK(lp.top[0].id == 1);
  CHECK(lp.top[0].logprob == doctest::Approx(std::log(0.6)));
  CHECK(lp.top[1].id == 2);
  CHECK(token_logprobs(logits, 0, 0).top.empty());
  CHECK(token_logprobs(logits, 0, 10).top.size() == 3);
  // Large logits do not overflow.
  const std::vector<float> big = {1000.0f, 1000.0f};
  CHECK(token_logprobs(big, 0, 0).logprob == doctest::Approx(std::log(0.5)));
}

}  // namespace dancemoe
