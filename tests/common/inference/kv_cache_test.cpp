// KvCache in its two elements (--kv-type): the layout and byte counts a
// bf16 cache keeps, prefix copies between caches, and a model whose caches
// are bf16 -- its logits within bf16 rounding of the f32 cache's, decode one
// token at a time equal to one pass over the prompt, and its batches equal
// to its lone sequences.
#include "common/inference/kv_cache.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/assembly/model_runtime.h"
#include "common/inference/transformer.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

TEST_CASE("kv cache: a bf16 cache takes half the bytes and offers only its own rows") {
  auto f32 = KvCache::create(3, 8, 8, 10);
  auto bf16 = KvCache::create(3, 8, 8, 10, KvElement::kBF16);
  REQUIRE(f32.is_ok());
  REQUIRE(bf16.is_ok());
  CHECK(f32->bytes_per_position() == 3 * 16 * 4);
  CHECK(bf16->bytes_per_position() == 3 * 16 * 2);
  CHECK(bf16->element() == KvElement::kBF16);
  CHECK(bf16->keys(0) == nullptr);
  CHECK(bf16->values(2) == nullptr);
  REQUIRE(bf16->keys_bf16(0) != nullptr);
  CHECK(f32->keys_bf16(0) == nullptr);
  // Layer l's keys, then its values, each capacity x width, layer after layer.
  CHECK(bf16->values_bf16(0) == bf16->keys_bf16(0) + 10 * 8);
  CHECK(bf16->keys_bf16(1) == bf16->keys_bf16(0) + 2 * 10 * 8);
  CHECK(f32->keys(1) == f32->keys(0) + 2 * 10 * 8);
  // Latent attention's caches have no values.
  auto latent = KvCache::create(2, 12, 0, 4, KvElement::kBF16);
  REQUIRE(latent.is_ok());
  CHECK(latent->values_bf16(0) == nullptr);
  CHECK(latent->keys_bf16(1) == latent->keys_bf16(0) + 4 * 12);
}

TEST_CASE("kv cache: copy_prefix copies a bf16 cache's rows and refuses the other element") {
  auto source = KvCache::create(2, 4, 4, 8, KvElement::kBF16);
  auto into = KvCache::create(2, 4, 4, 6, KvElement::kBF16);
  auto other = KvCache::create(2, 4, 4, 8);
  REQUIRE(source.is_ok());
  REQUIRE(into.is_ok());
  REQUIRE(other.is_ok());
  for (int64_t layer = 0; layer < 2; ++layer) {
    for (int64_t i = 0; i < 8 * 4; ++i) {
      source->keys_bf16(layer)[i] = static_cast<uint16_t>(1000 * layer + i);
      source->values_bf16(layer)[i] = static_cast<uint16_t>(5000 + 1000 * layer + i);
    }
  }
  source->set_n_past(5);
  REQUIRE(into->copy_prefix(*source, 5).is_ok());
  CHECK(into->n_past() == 5);
  for (int64_t layer = 0; layer < 2; ++layer) {
    CHECK(std::memcmp(into->keys_bf16(layer), source->keys_bf16(layer), 5 * 4 * 2) == 0);
    CHECK(std::memcmp(into->values_bf16(layer), source->values_bf16(layer), 5 * 4 * 2) == 0);
  }
  const Status refused = other->copy_prefix(*source, 3);
  CHECK(!refused.is_ok());
  CHECK(refused.message().find("elements") != std::string::npos);
}

TEST_CASE("kv cache: --kv-type names and the host element of each attention kind") {
  CHECK(parse_kv_element("f32") == KvElement::kF32);
  CHECK(parse_kv_element("bf16") == KvElement::kBF16);
  CHECK(!parse_kv_element("f16").has_value());
  CHECK(kv_element_name(KvElement::kBF16) == "bf16");
  ModelConfig grouped;
  grouped.attention = AttentionKind::kGrouped;
  grouped.n_layers = 4;
  grouped.n_kv_heads = 2;
  grouped.head_dim = 16;
  CHECK(host_kv_element(grouped, KvElement::kBF16) == KvElement::kBF16);
  CHECK(host_kv_bytes_per_position(grouped, KvElement::kBF16) == 4 * 64 * 2);
  CHECK(host_kv_bytes_per_position(grouped, KvElement::kF32) == 4 * 64 * 4);
  ModelConfig latent = grouped;
  latent.attention = AttentionKind::kLatent;
  CHECK(host_kv_element(latent, KvElement::kBF16) == KvElement::kF32);
}

std::unique_ptr<ModelRuntime> open_with(const std::filesystem::path& dir, KvElement element,
                                        ComputePrecision precision) {
  RuntimeOptions options;
  options.precision = precision;
  options.devices.n_threads = 2;
  options.kv_element = element;
  Result<std::unique_ptr<ModelRuntime>> model = ModelRuntime::open(dir, options);
  INFO(model.status().to_string());
  REQUIRE(model.is_ok());
  return std::move(model).value();
}

TEST_CASE("kv cache: a model with bf16 caches stays within bf16 rounding and decodes exactly") {
  testing::TempDir dir("kv-bf16");
  testing::write_model(testing::tiny_spec(9), dir.path());
  auto exact = open_with(dir.path(), KvElement::kF32, ComputePrecision::kF32);
  auto half = open_with(dir.path(), KvElement::kBF16, ComputePrecision::kF32);
  Transformer& tf = half->transformer();
  CHECK(tf.cache_bytes_per_position() * 2 == exact->transformer().cache_bytes_per_position());
  auto made = tf.new_cache(8);
  REQUIRE(made.is_ok());
  CHECK(made->element() == KvElement::kBF16);

  const std::vector<int32_t> ids = {3, 17, 250, 9, 9, 41, 7, 300, 12, 5, 88, 1};
  const std::vector<float> a = testing::all_logits(*exact, ids);
  const std::vector<float> b = testing::all_logits(*half, ids);
  float range = 0.0f;
  for (float x : a) range = std::max(range, std::fabs(x));
  // Only the cached k and v are rounded (to 8 significant bits).
  const float diff = testing::max_abs_diff(a, b);
  CHECK(diff > 0.0f);
  CHECK(diff <= 2e-2f * range);

  // One token at a time through the cache = the whole prompt at once: both
  // read every position's k and v back from the bf16 rows.
  auto cache = tf.new_cache(static_cast<int64_t>(ids.size()));
  REQUIRE(cache.is_ok());
  const auto vocab = static_cast<size_t>(half->config().vocab_size);
  for (size_t t = 0; t < ids.size(); ++t) {
    std::vector<float> step;
    REQUIRE(tf.forward(std::span(&ids[t], 1), *cache, LogitsMode::kLast, &step).is_ok());
    CHECK(testing::max_abs_diff(step, std::span(b).subspan(t * vocab, vocab)) <= 1e-4f * range);
  }
}

TEST_CASE("kv cache: bf16 caches give the same tokens batched as alone") {
  testing::TempDir dir("kv-bf16-batch");
  testing::write_model(testing::tiny_spec(4), dir.path());
  auto model = open_with(dir.path(), KvElement::kBF16, ComputePrecision::kF32);
  Transformer& tf = model->transformer();
  const std::vector<std::vector<int32_t>> prompts = {{5, 9, 13}, {200, 3, 3, 3, 71}, {42}};
  std::vector<std::vector<float>> alone;
  for (const auto& p : prompts) {
    auto cache = tf.new_cache(16);
    REQUIRE(cache.is_ok());
    std::vector<float> logits;
    REQUIRE(tf.forward(p, *cache, LogitsMode::kLast, &logits).is_ok());
    alone.push_back(std::move(logits));
  }
  std::vector<KvCache> caches;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto cache = tf.new_cache(16);
    REQUIRE(cache.is_ok());
    caches.push_back(std::move(*cache));
  }
  std::vector<SequenceStep> steps;
  for (size_t i = 0; i < prompts.size(); ++i) {
    steps.push_back({std::span(prompts[i]), &caches[i], true});
  }
  std::vector<float> batched;
  REQUIRE(tf.forward_batch(steps, &batched).is_ok());
  const auto vocab = static_cast<size_t>(model->config().vocab_size);
  for (size_t i = 0; i < prompts.size(); ++i) {
    CHECK(testing::max_abs_diff(alone[i], std::span(batched).subspan(i * vocab, vocab)) <= 1e-4f);
  }
}

}  // namespace
}  // namespace dancemoe
