#include "common/inference/transformer.h"

#include <doctest/doctest.h>

#include <map>

#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

SyntheticModelSpec tiny(const std::string& arch) {
  SyntheticModelSpec spec;
  spec.arch = arch;
  spec.preset = "tiny";
  spec.seed = 11;
  spec.write_tokenizer = false;
  return spec;
}

std::vector<int32_t> sequence(int n, int vocab) {
  std::vector<int32_t> ids;
  uint32_t x = 12345;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    ids.push_back(static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab)));
  }
  return ids;
}

}  // namespace

TEST_CASE("transformer: decode with the KV cache equals a full re-run of the prefix") {
  for (std::string arch : {"qwen3_moe", "mixtral"}) {
    CAPTURE(arch);
    testing::TempDir dir("kv");
    testing::write_model(tiny(arch), dir.path());
    auto model = testing::open_model(dir.path());
    Transformer& tf = model->transformer();
    const std::vector<int32_t> ids = sequence(24, 512);
    auto cache = tf.new_cache(64);
    REQUIRE(cache.is_ok());
    std::vector<float> logits;
    // Prefill 8, then decode one at a time; each step is compared with a
    // fresh forward over the whole prefix.
    REQUIRE(tf.forward(std::span(ids).first(8), *cache, LogitsMode::kLast, &logits).is_ok());
    float worst = 0.0f;
    for (size_t t = 8; t < ids.size(); ++t) {
      REQUIRE(tf.forward(std::span(ids).subspan(t, 1), *cache, LogitsMode::kLast, &logits).is_ok());
      auto fresh = tf.new_cache(64);
      std::vector<float> full;
      REQUIRE(tf.forward(std::span(ids).first(t + 1), *fresh, LogitsMode::kLast, &full).is_ok());
      worst = std::max(worst, testing::max_abs_diff(logits, full));
    }
    MESSAGE(arch, ": max |decode - full re-run| = ", worst);
    CHECK(worst <= 1e-4f);
  }
}

TEST_CASE("transformer: bf16 activations stay close to the f32 reference and pick the same token") {
  testing::TempDir dir("bf16");
  testing::write_model(tiny("qwen3_moe"), dir.path());
  auto f32 = testing::open_model(dir.path(), ComputePrecision::kF32);
  auto bf16 = testing::open_model(dir.path(), ComputePrecision::kBF16);
  const std::vector<int32_t> ids = sequence(32, 512);
  std::vector<float> a, b;
  auto ca = f32->transformer().new_cache(32);
  auto cb = bf16->transformer().new_cache(32);
  REQUIRE(f32->transformer().forward(ids, *ca, LogitsMode::kAll, &a).is_ok());
  REQUIRE(bf16->transformer().forward(ids, *cb, LogitsMode::kAll, &b).is_ok());
  const float err = testing::max_abs_diff(a, b);
  MESSAGE("max |bf16 - f32| logits = ", err);
  CHECK(err < 0.1f);
  int same_argmax = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    auto ra = std::span(a).subspan(t * 512, 512);
    auto rb = std::span(b).subspan(t * 512, 512);
    same_argmax += std::max_element(ra.begin(), ra.end()) - ra.begin() ==
                   std::max_element(rb.begin(), rb.end()) - rb.begin();
  }
  CHECK(same_argmax >= 30);
}

TEST_CASE("transformer: results do not depend on the thread count") {
  testing::TempDir dir("threads");
  testing::write_model(tiny("mixtral"), dir.path());
  const std::vector<int32_t> ids = sequence(20, 512);
  std::vector<float> reference;
  for (int threads : {1, 2, 3}) {
    auto model = testing::open_model(dir.path(), ComputePrecision::kF32, threads);
    auto cache = model->transformer().new_cache(32);
    std::vector<float> logits;
    REQUIRE(model->transformer().forward(ids, *cache, LogitsMode::kAll, &logits).is_ok());
    if (reference.empty()) reference = logits;
    CHECK(testing::max_abs_diff(reference, logits) < 1e-5f);
  }
}

TEST_CASE("transformer: a missing expert, a full context and a bad token are clear errors") {
  testing::TempDir dir("errors");
  testing::write_model(tiny("qwen3_moe"), dir.path());
  RuntimeOptions options;
  options.precision = ComputePrecision::kF32;
  options.experts = std::vector<ExpertRef>{{0, 0}, {0, 1}};  // almost nothing resident
  auto partial = ModelRuntime::open(dir.path(), options);
  REQUIRE(partial.is_ok());
  Transformer& tf = (*partial)->transformer();
  auto cache = tf.new_cache(8);
  std::vector<float> logits;
  const std::vector<int32_t> ids = sequence(4, 512);
  Status s = tf.forward(ids, *cache, LogitsMode::kLast, &logits);
  REQUIRE_FALSE(s.is_ok());
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(s.message().find("is not resident on this node") != std::string::npos);
  CHECK(cache->n_past() == 0);

  auto model = testing::open_model(dir.path());
  auto small = model->transformer().new_cache(4);
  s = model->transformer().forward(sequence(5, 512), *small, LogitsMode::kLast, &logits);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  const std::vector<int32_t> bad = {1, 512};
  s = model->transformer().forward(bad, *small, LogitsMode::kLast, &logits);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("token id 512 at position 1") != std::string::npos);
}

TEST_CASE("transformer: a node with only the experts it needs still computes the same logits") {
  testing::TempDir dir("subset");
  testing::write_model(tiny("qwen3_moe"), dir.path());
  const std::vector<int32_t> ids = sequence(6, 512);
  auto full = testing::open_model(dir.path());
  std::map<std::pair<int, int>, bool> used;
  full->transformer().set_routing_observer([&](int64_t layer, const RoutingDecision& r) {
    for (int32_t e : r.expert_ids) used[{static_cast<int>(layer), e}] = true;
  });
  auto cache = full->transformer().new_cache(8);
  std::vector<float> expected;
  REQUIRE(full->transformer().forward(ids, *cache, LogitsMode::kAll, &expected).is_ok());

  RuntimeOptions options;
  options.precision = ComputePrecision::kF32;
  options.experts = std::vector<ExpertRef>{};
  for (const auto& [key, _] : used) options.experts->push_back({key.first, key.second});
  auto subset = ModelRuntime::open(dir.path(), options);
  REQUIRE(subset.is_ok());
  CHECK((*subset)->experts().n_resident() < full->experts().n_resident());
  auto cache2 = (*subset)->transformer().new_cache(8);
  std::vector<float> logits;
  REQUIRE((*subset)->transformer().forward(ids, *cache2, LogitsMode::kAll, &logits).is_ok());
  CHECK(testing::max_abs_diff(expected, logits) == 0.0f);
}

TEST_CASE("transformer: a batch of sequences gives each the logits it gets alone") {
  for (std::string arch : {"qwen3_moe", "mixtral", "deepseek_v3", "glm4_moe"}) {
    CAPTURE(arch);
    testing::TempDir dir("batch");
    testing::write_model(tiny(arch), dir.path());
    auto model = testing::open_model(dir.path());
    Transformer& tf = model->transformer();
    REQUIRE(tf.batches_sequences());
    const std::vector<int32_t> ids = sequence(40, 512);
    // Three sequences at different positions: one decoding a token after a
    // prefix of 9, one prefilling 7 tokens after 5, one starting with 12.
    std::vector<KvCache> alone;
    std::vector<KvCache> batched;
    const auto make = [&] {
      Result<KvCache> made = tf.new_cache(64);
      REQUIRE(made.is_ok());
      return std::move(made).value();
    };
    for (int i = 0; i < 3; ++i) {
      alone.push_back(make());
      batched.push_back(make());
    }
    std::vector<float> scratch;
    const auto prefix = [&](int i, size_t n) {
      auto tokens = std::span(ids).subspan(static_cast<size_t>(i) * 13, n);
      REQUIRE(
          tf.forward(tokens, alone[static_cast<size_t>(i)], LogitsMode::kNone, &scratch).is_ok());
      REQUIRE(
          tf.forward(tokens, batched[static_cast<size_t>(i)], LogitsMode::kNone, &scratch).is_ok());
    };
    prefix(0, 9);
    prefix(1, 5);
    const std::span<const int32_t> parts[3] = {std::span(ids).subspan(30, 1),
                                               std::span(ids).subspan(31, 7),
                                               std::span(ids).subspan(26, 12)};
    std::vector<float> expected;
    for (int i = 0; i < 3; ++i) {
      std::vector<float> row;
      REQUIRE(tf.forward(parts[i], alone[static_cast<size_t>(i)], LogitsMode::kLast, &row).is_ok());
      if (i != 1) expected.insert(expected.end(), row.begin(), row.end());
    }
    const SequenceStep steps[3] = {{parts[0], &batched[0], true},
                                   {parts[1], &batched[1], false},
                                   {parts[2], &batched[2], true}};
    std::vector<float> got;
    REQUIRE(tf.forward_batch(steps, &got).is_ok());
    REQUIRE(got.size() == expected.size());
    const float err = testing::max_abs_diff(got, expected);
    MESSAGE(arch, ": max |batched - alone| = ", err);
    CHECK(err <= 1e-4f);
    CHECK(batched[0].n_past() == 10);
    CHECK(batched[1].n_past() == 12);
    CHECK(batched[2].n_past() == 12);
    // The next step decodes one token in each; still the same.
    std::vector<float> next_alone;
    for (int i = 0; i < 3; ++i) {
      std::vector<float> row;
      REQUIRE(tf.forward(std::span(ids).subspan(static_cast<size_t>(i), 1),
                         alone[static_cast<size_t>(i)], LogitsMode::kLast, &row)
                  .is_ok());
      next_alone.insert(next_alone.end(), row.begin(), row.end());
    }
    const SequenceStep decode[3] = {{std::span(ids).subspan(0, 1), &batched[0], true},
                                    {std::span(ids).subspan(1, 1), &batched[1], true},
                                    {std::span(ids).subspan(2, 1), &batched[2], true}};
    REQUIRE(tf.forward_batch(decode, &got).is_ok());
    CHECK(testing::max_abs_diff(got, next_alone) <= 1e-4f);
  }
}

TEST_CASE(
    "transformer: a bad sequence in a batch is a clear error and leaves every cache as it was") {
  testing::TempDir dir("batch_err");
  testing::write_model(tiny("qwen3_moe"), dir.path());
  auto model = testing::open_model(dir.path());
  Transformer& tf = model->transformer();
  auto a = tf.new_cache(8);
  auto b = tf.new_cache(8);
  const std::vector<int32_t> ok = {1, 2, 3};
  const std::vector<int32_t> bad = {4, 9999};
  std::vector<float> logits;
  const SequenceStep steps[2] = {{ok, &*a, true}, {bad, &*b, true}};
  Status status = tf.forward_batch(steps, &logits);
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK(status.message().find("sequence 1") != std::string::npos);
  CHECK(a->n_past() == 0);
  const SequenceStep shared[2] = {{ok, &*a, true}, {ok, &*a, true}};
  CHECK(tf.forward_batch(shared, &logits).message().find("share one KV cache") !=
        std::string::npos);
}

TEST_CASE("transformer: a batch run between two layers of another leaves both as each runs alone") {
  for (std::string arch : {"qwen3_moe", "deepseek_v3"}) {
    CAPTURE(arch);
    testing::TempDir dir("hook");
    testing::write_model(tiny(arch), dir.path());
    auto model = testing::open_model(dir.path());
    Transformer& tf = model->transformer();
    const std::vector<int32_t> ids = sequence(40, 512);
    const auto make = [&] {
      Result<KvCache> made = tf.new_cache(64);
      REQUIRE(made.is_ok());
      return std::move(made).value();
    };
    // The paused batch: two sequences, one with a prefix; the interjected
    // one: a prompt of 6 and a prompt of 3, from empty caches.
    std::vector<float> scratch;
    KvCache a_alone = make(), a = make(), b_alone = make(), b = make();
    REQUIRE(tf.forward(std::span(ids).first(5), a_alone, LogitsMode::kNone, &scratch).is_ok());
    REQUIRE(tf.forward(std::span(ids).first(5), a, LogitsMode::kNone, &scratch).is_ok());
    const std::span<const int32_t> outer_tokens[2] = {std::span(ids).subspan(5, 1),
                                                      std::span(ids).subspan(10, 4)};
    const std::span<const int32_t> inner_tokens[2] = {std::span(ids).subspan(20, 6),
                                                      std::span(ids).subspan(30, 3)};
    std::vector<float> expected_outer, expected_inner;
    {
      const SequenceStep outer[2] = {{outer_tokens[0], &a_alone, true},
                                     {outer_tokens[1], &b_alone, true}};
      REQUIRE(tf.forward_batch(outer, &expected_outer).is_ok());
      KvCache c = make(), d = make();
      const SequenceStep inner[2] = {{inner_tokens[0], &c, true}, {inner_tokens[1], &d, true}};
      REQUIRE(tf.forward_batch(inner, &expected_inner).is_ok());
    }
    CHECK(tf.forward_between_layers({}, &scratch).code() == StatusCode::kFailedPrecondition);

    KvCache c = make(), d = make();
    const SequenceStep inner[2] = {{inner_tokens[0], &c, true}, {inner_tokens[1], &d, true}};
    std::vector<float> got_inner;
    int calls = 0;
    Status inner_status = internal_error("not run");
    tf.set_layer_hook([&] {
      if (calls++ == 0) inner_status = tf.forward_between_layers(inner, &got_inner);
    });
    const SequenceStep outer[2] = {{outer_tokens[0], &a, true}, {outer_tokens[1], &b, true}};
    std::vector<float> got_outer;
    REQUIRE(tf.forward_batch(outer, &got_outer).is_ok());
    tf.set_layer_hook(nullptr);
    // Between every two layers of the outer batch, not inside the inner one.
    CHECK(calls == tf.config().n_layers - 1);
    REQUIRE(inner_status.is_ok());
    CHECK(testing::max_abs_diff(got_outer, expected_outer) <= 1e-5f);
    CHECK(testing::max_abs_diff(got_inner, expected_inner) <= 1e-5f);
    CHECK(a.n_past() == 6);
    CHECK(b.n_past() == 4);
    CHECK(c.n_past() == 6);
    CHECK(d.n_past() == 3);
  }
}

}  // namespace dancemoe
