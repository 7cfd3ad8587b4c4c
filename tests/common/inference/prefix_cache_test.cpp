#include "common/inference/prefix_cache.h"

#include <doctest/doctest.h>

#include "common/inference/transformer.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

std::vector<int32_t> random_tokens(int n, uint32_t seed) {
  std::vector<int32_t> ids;
  uint32_t x = seed;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    ids.push_back(static_cast<int32_t>((x >> 8) % 512u));
  }
  return ids;
}

struct PrefixFixture {
  testing::TempDir dir{"prefix"};
  std::unique_ptr<ModelRuntime> model;
  PrefixFixture() {
    testing::write_model(testing::tiny_spec(3), dir.path());
    model = testing::open_model(dir.path());
  }
  Transformer& tf() { return model->transformer(); }
  PrefixCache::CacheMaker maker() {
    return [this](int64_t n) { return tf().new_cache(n); };
  }
};

}  // namespace

TEST_CASE("prefix cache: a hit gives the same logits as a cold run of the whole prompt") {
  PrefixFixture f;
  // A chat's first turn (system prompt + question) and its second turn,
  // which repeats the first and adds to it.
  const std::vector<int32_t> first = random_tokens(40, 7);
  std::vector<int32_t> second = first;
  const std::vector<int32_t> more = random_tokens(12, 99);
  second.insert(second.end(), more.begin(), more.end());

  PrefixCache cache(64 << 20, 16, f.maker());
  std::vector<float> logits;
  {
    auto kv = f.tf().new_cache(128);
    REQUIRE(f.tf().forward(first, *kv, LogitsMode::kNone, &logits).is_ok());
    cache.insert(first, *kv);
  }
  CHECK(cache.stats().entries == 1);

  auto cold = f.tf().new_cache(128);
  std::vector<float> cold_logits;
  REQUIRE(f.tf().forward(second, *cold, LogitsMode::kLast, &cold_logits).is_ok());

  auto warm = f.tf().new_cache(128);
  const int64_t reused = cache.restore(second, static_cast<int64_t>(second.size()) - 1, *warm);
  CHECK(reused == 40);
  CHECK(warm->n_past() == 40);
  std::vector<float> warm_logits;
  REQUIRE(f.tf()
              .forward(std::span(second).subspan(static_cast<size_t>(reused)), *warm,
                       LogitsMode::kLast, &warm_logits)
              .is_ok());
  const float err = testing::max_abs_diff(cold_logits, warm_logits);
  MESSAGE("max |prefix hit - cold| = ", err);
  CHECK(err <= 1e-5f);
  const PrefixCache::Stats s = cache.stats();
  CHECK(s.hits == 1);
  CHECK(s.saved_tokens == 40);
}

TEST_CASE("prefix cache: short or foreign prefixes miss, and a full prompt keeps its last token") {
  PrefixFixture f;
  PrefixCache cache(64 << 20, 16, f.maker());
  const std::vector<int32_t> a = random_tokens(32, 1);
  auto kv = f.tf().new_cache(64);
  std::vector<float> logits;
  REQUIRE(f.tf().forward(a, *kv, LogitsMode::kNone, &logits).is_ok());
  cache.insert(a, *kv);

  std::vector<int32_t> shares_ten(a.begin(), a.begin() + 10);
  const std::vector<int32_t> tail = random_tokens(20, 5);
  shares_ten.insert(shares_ten.end(), tail.begin(), tail.end());
  auto into = f.tf().new_cache(64);
  CHECK(cache.restore(shares_ten, 29, *into) == 0);  // below the 16-token minimum
  CHECK(cache.restore(random_tokens(30, 77), 29, *into) == 0);
  CHECK(into->n_past() == 0);
  // The same prompt again: at most max_tokens (its length - 1) positions.
  CHECK(cache.restore(a, 31, *into) == 31);
  CHECK(cache.stats().misses == 2);
}

TEST_CASE("prefix cache: the byte budget holds, least recently used entries go first") {
  PrefixFixture f;
  auto probe = f.tf().new_cache(1);
  const int64_t per_entry = 32 * probe->bytes_per_position();
  PrefixCache cache(2 * per_entry + per_entry / 2, 16, f.maker());  // room for two
  std::vector<std::vector<int32_t>> prompts;
  std::vector<float> logits;
  for (uint32_t i = 0; i < 3; ++i) {
    prompts.push_back(random_tokens(32, 100 + i));
    auto kv = f.tf().new_cache(32);
    REQUIRE(f.tf().forward(prompts.back(), *kv, LogitsMode::kNone, &logits).is_ok());
    cache.insert(prompts.back(), *kv);
    if (i == 1) {
      auto touch = f.tf().new_cache(32);
      CHECK(cache.restore(prompts[0], 31, *touch) == 31);  // the first is now the newest
    }
  }
  const PrefixCache::Stats s = cache.stats();
  CHECK(s.entries == 2);
  CHECK(s.evictions == 1);
  CHECK(s.bytes <= s.budget_bytes);
  auto into = f.tf().new_cache(32);
  CHECK(cache.restore(prompts[1], 31, *into) == 0);  // the evicted one
  auto into0 = f.tf().new_cache(32);
  CHECK(cache.restore(prompts[0], 31, *into0) == 31);
  // An entry the new one extends is replaced, not kept twice.
  std::vector<int32_t> longer = prompts[2];
  longer.push_back(3);
  auto kv = f.tf().new_cache(33);
  REQUIRE(f.tf().forward(longer, *kv, LogitsMode::kNone, &logits).is_ok());
  cache.insert(longer, *kv);
  CHECK(cache.stats().entries <= 2);
}

TEST_CASE("prefix cache: a finished sequence's cache is taken over when mostly used, else copied") {
  PrefixFixture f;
  PrefixCache cache(64 << 20, 16, f.maker());
  std::vector<float> logits;
  const std::vector<int32_t> a = random_tokens(30, 21);
  auto kv = f.tf().new_cache(32);  // 30 of 32 positions used: kept as it is
  REQUIRE(f.tf().forward(a, *kv, LogitsMode::kNone, &logits).is_ok());
  const int64_t per_position = kv->bytes_per_position();
  cache.insert(a, std::move(*kv));
  CHECK(cache.stats().entries == 1);
  CHECK(cache.stats().bytes == 32 * per_position);  // its whole capacity is counted
  // What it holds is what the sequence computed: a restore gives the same
  // logits as a cold run.
  std::vector<int32_t> longer = a;
  longer.push_back(5);
  auto cold = f.tf().new_cache(40);
  std::vector<float> cold_logits, warm_logits;
  REQUIRE(f.tf().forward(longer, *cold, LogitsMode::kLast, &cold_logits).is_ok());
  auto warm = f.tf().new_cache(40);
  CHECK(cache.restore(longer, 30, *warm) == 30);
  REQUIRE(f.tf()
              .forward(std::span(longer).subspan(30), *warm, LogitsMode::kLast, &warm_logits)
              .is_ok());
  CHECK(testing::max_abs_diff(cold_logits, warm_logits) <= 1e-5f);

  // 20 of 64 positions used: a compact copy of the 20.
  const std::vector<int32_t> b = random_tokens(20, 22);
  auto sparse = f.tf().new_cache(64);
  REQUIRE(f.tf().forward(b, *sparse, LogitsMode::kNone, &logits).is_ok());
  cache.insert(b, std::move(*sparse));
  CHECK(cache.stats().entries == 2);
  CHECK(cache.stats().bytes == (32 + 20) * per_position);
  auto into = f.tf().new_cache(20);
  CHECK(cache.restore(b, 19, *into) == 19);

  // Mostly used but larger than kAdoptMaxBytes: copied too (only the bytes
  // are counted here; what a copy holds is checked above).
  const int64_t big = PrefixCache::kAdoptMaxBytes / per_position + 100;
  const int64_t used = big * 9 / 10;
  auto large = f.tf().new_cache(big);
  large->set_n_past(used);
  const std::vector<int32_t> c = random_tokens(static_cast<int>(used), 23);
  const int64_t before = cache.stats().bytes;
  cache.insert(c, std::move(*large));
  CHECK(cache.stats().entries == 3);
  CHECK(cache.stats().bytes - before == used * per_position);
}

}  // namespace dancemoe
