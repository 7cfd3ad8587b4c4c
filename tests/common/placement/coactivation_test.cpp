#include "common/placement/coactivation.h"

#include <doctest/doctest.h>

#include <vector>

namespace dancemoe {
namespace {

void add(CoActivationCounter& c, int32_t layer, std::vector<int32_t> ids, int times = 1) {
  for (int i = 0; i < times; ++i) c.add_token(layer, ids);
}

TEST_CASE("coactivation: counts every pair of a token once per layer, in either order") {
  CoActivationCounter c({4, 0, 3});
  add(c, 0, {2, 0, 3});
  add(c, 0, {0, 2});
  add(c, 2, {1, 2});
  CHECK(c.tokens(0) == 2);
  CHECK(c.count(0, 0, 2) == 2);
  CHECK(c.count(0, 2, 0) == 2);
  CHECK(c.count(0, 0, 3) == 1);
  CHECK(c.count(0, 2, 3) == 1);
  CHECK(c.count(0, 0, 1) == 0);
  CHECK(c.uses(0, 0) == 2);
  CHECK(c.count(2, 1, 2) == 1);
  CHECK(c.tokens(1) == 0);
}

TEST_CASE("coactivation: ignores dense layers, ids out of range and repeats within a token") {
  CoActivationCounter c({3, 0});
  add(c, 1, {0, 1});            // a dense layer: nothing counted
  add(c, 5, {0, 1});            // no such layer
  add(c, -1, {0, 1});           // nor this one
  add(c, 0, {1, 1, 7, -2, 2});  // 1 twice, 7 and -2 out of range: one pair (1, 2)
  CHECK(c.tokens(1) == 0);
  CHECK(c.tokens(0) == 1);
  CHECK(c.count(0, 1, 2) == 1);
  CHECK(c.uses(0, 1) == 1);
  CHECK(c.count(0, 0, 1) == 0);
  CHECK(c.top_pairs(10).empty());  // one token: every pair exactly as independence predicts
  c.clear();
  CHECK(c.tokens(0) == 0);
  CHECK(c.count(0, 1, 2) == 0);
  CHECK(c.top_pairs(10).empty());
}

TEST_CASE("coactivation: reports the pairs most above independence, not the most frequent") {
  // Experts 0 and 1 go with everything (frequent pairs, no excess); 2 and 3
  // are rarer but always routed together; 4 goes with 0 and 1 only.
  CoActivationCounter c({5});
  add(c, 0, {0, 1}, 60);
  add(c, 0, {0, 2, 3}, 20);
  add(c, 0, {1, 2, 3}, 20);
  add(c, 0, {0, 1, 4}, 20);
  // T = 120; f0 = 100, f1 = 100, f2 = f3 = 40, f4 = 20.
  // excess(0,1) = 80 - 100*100/120 = -3.3; excess(2,3) = 40 - 40*40/120 = 26.7;
  // excess(0,4) = 20 - 100*20/120 = 3.3 (and the same for (1,4));
  // excess(0,2) = 20 - 100*40/120 = -13.3.
  const std::vector<CoActivationCounter::Pair> top = c.top_pairs(2);
  REQUIRE(top.size() == 2);
  CHECK(top[0] == CoActivationCounter::Pair{0, 2, 3, 40});
  CHECK(top[1] == CoActivationCounter::Pair{0, 0, 4, 20});  // ties with (1, 4): lower ids
  // Only positive excess is listed.
  CHECK(c.top_pairs(100).size() == 3);
}

TEST_CASE("coactivation: the per-layer limit applies to each layer") {
  CoActivationCounter c({3, 3});
  add(c, 0, {0, 1}, 5);
  add(c, 0, {2}, 5);
  add(c, 1, {1, 2}, 5);
  add(c, 1, {0}, 5);
  const auto top = c.top_pairs(1);
  REQUIRE(top.size() == 2);
  CHECK(top[0] == CoActivationCounter::Pair{0, 0, 1, 5});
  CHECK(top[1] == CoActivationCounter::Pair{1, 1, 2, 5});
  CHECK(c.top_pairs(0).empty());
}

}  // namespace
}  // namespace dancemoe
