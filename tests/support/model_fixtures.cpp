#include "tests/support/model_fixtures.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "common/model/gguf/gguf_quantize.h"
#include "kernels/interleave.h"
#include "kernels/quant_format.h"

namespace dancemoe::testing {

SyntheticModelSpec tiny_spec(uint64_t seed) {
  SyntheticModelSpec spec;
  spec.preset = "tiny";
  spec.seed = seed;
  spec.write_tokenizer = false;
  return spec;
}

void write_model(const SyntheticModelSpec& spec, const std::filesystem::path& dir) {
  Status status = write_synthetic_model(spec, dir);
  INFO(status.to_string());
  REQUIRE(status.is_ok());
}

std::filesystem::path write_gguf_model(const SyntheticModelSpec& spec,
                                       const std::filesystem::path& dir, const std::string& name,
                                       gguf::Mixture mixture) {
  write_model(spec, dir / "hf");
  Result<std::unique_ptr<Checkpoint>> hf = Checkpoint::open(dir / "hf");
  REQUIRE(hf.is_ok());
  gguf::QuantizeOptions options;
  options.mixture = mixture;
  const Result<gguf::QuantizeSummary> written = gguf::quantize_to_gguf(**hf, dir / name, options);
  REQUIRE_MESSAGE(written.is_ok(), written.status().to_string());
  return dir / name;
}

std::unique_ptr<ModelRuntime> open_model(const std::filesystem::path& dir,
                                         ComputePrecision precision, int n_threads) {
  RuntimeOptions options;
  options.precision = precision;
  options.devices.n_threads = n_threads;
  Result<std::unique_ptr<ModelRuntime>> model = ModelRuntime::open(dir, options);
  INFO(model.status().to_string());
  REQUIRE(model.is_ok());
  return std::move(model).value();
}

void check_same_computation(std::span<const float> a, std::span<const float> b, size_t vocab,
                            float first_tolerance) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() >= vocab);
  float max_a = 0.0f;
  for (float x : a) max_a = std::max(max_a, std::fabs(x));
  const float first = max_abs_diff(a.first(vocab), b.first(vocab));
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::fabs(a[i] - b[i]);
  const double mean = sum / static_cast<double>(a.size());
  MESSAGE("first position: max |difference| " << first << ", mean |difference| " << mean
                                              << ", of max |logit| " << max_a);
  CHECK(first <= first_tolerance * max_a);
  CHECK(mean <= 1e-2 * max_a);
}

std::vector<uint8_t> expert_rows_bytes(const ExpertWeights& w) {
  std::vector<uint8_t> bytes;
  for (const kernels::WeightView* v : {&w.gate, &w.up, &w.down}) {
    const size_t at = bytes.size();
    bytes.resize(at + static_cast<size_t>(v->rows * kernels::weight_row_bytes(v->type, v->cols)));
    kernels::copy_as_rows(*v, bytes.data() + at);
  }
  return bytes;
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  REQUIRE(a.size() == b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

std::vector<float> all_logits(ModelRuntime& model, const std::vector<int32_t>& ids) {
  Transformer& tf = model.transformer();
  Result<KvCache> cache = tf.new_cache(static_cast<int64_t>(ids.size()) + 1);
  REQUIRE(cache.is_ok());
  std::vector<float> out;
  REQUIRE(tf.forward(ids, *cache, LogitsMode::kAll, &out).is_ok());
  return out;
}

}  // namespace dancemoe::testing
