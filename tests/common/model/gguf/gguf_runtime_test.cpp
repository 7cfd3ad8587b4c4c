// A GGUF checkpoint runs the same model: the tiny synthetic checkpoints
// (Qwen3-MoE with a dense layer, Mixtral with its interleaved q/k, and every
// other family with a GGUF form) written as f32 GGUF give the safetensors
// logits in f32 mode (the values are the
// same, so only summation order differs); a Q8_0 file stays close to them in
// bf16 mode; its weights are used in place (no copy) unless asked; and
// --expert-type holds a safetensors checkpoint's experts quantized, with the
// sizes, transfers and installs in the held format; Q4_K matrices are held
// interleaved for the CPU kernels (kernels/interleave.h) with the same
// numbers, sizes and transfers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/assembly/model_runtime.h"
#include "common/model/gguf/gguf_quantize.h"
#include "kernels/interleave.h"
#include "kernels/quant_format.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

using testing::TempDir;

std::filesystem::path quantize(const std::filesystem::path& hf, const std::filesystem::path& out,
                               gguf::Mixture mixture) {
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(hf);
  REQUIRE(ckpt.is_ok());
  gguf::QuantizeOptions options;
  options.mixture = mixture;
  Result<gguf::QuantizeSummary> s = gguf::quantize_to_gguf(**ckpt, out, options);
  REQUIRE_MESSAGE(s.is_ok(), s.status().to_string());
  return out;
}

std::vector<int32_t> prompt(int64_t vocab) {
  std::mt19937 rng(3);
  std::vector<int32_t> ids(9);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return ids;
}

float max_abs(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

TEST_CASE("gguf runtime: f32 GGUF files compute the safetensors model's logits") {
  for (const char* arch : {"qwen3_moe", "mixtral"}) {
    INFO(arch);
    TempDir dir("gguf-runtime");
    SyntheticModelSpec spec;
    spec.arch = arch;
    testing::write_model(spec, dir.path() / "hf");
    const auto gguf =
        quantize(dir.path() / "hf", dir.path() / "tiny-f32.gguf", gguf::Mixture::kF32);
    auto ref = testing::open_model(dir.path() / "hf", ComputePrecision::kF32);
    auto got = testing::open_model(gguf, ComputePrecision::kF32);
    CHECK(got->checkpoint().is_gguf());
    CHECK(got->checkpoint().model_id() == ref->checkpoint().model_id());
    const std::vector<int32_t> ids = prompt(ref->config().vocab_size);
    const std::vector<float> a = testing::all_logits(*ref, ids), b = testing::all_logits(*got, ids);
    CHECK(testing::max_abs_diff(a, b) <= 1e-4f * max_abs(a));
  }
}

// Each family with a GGUF form (llama.cpp's names and keys): its tiny
// preset written as f32 GGUF computes the safetensors logits (same values;
// gpt-oss's MXFP4 experts are copied as they are), keeps the model id (the
// metadata gives back the same config), and as Q8_0 stays within a percent
// of the logits' range on average (GLM-4.5: 2.5%).
TEST_CASE("gguf runtime: every family's GGUF file computes the safetensors model's logits") {
  for (const char* arch :
       {"olmoe", "qwen2_moe", "deepseek_v2", "deepseek_v3", "glm4_moe", "gpt_oss"}) {
    INFO(std::string(arch));
    TempDir dir("gguf-family");
    SyntheticModelSpec spec;
    spec.arch = arch;
    testing::write_model(spec, dir.path() / "hf");
    auto ref = testing::open_model(dir.path() / "hf", ComputePrecision::kF32);
    const std::vector<int32_t> ids = prompt(ref->config().vocab_size);
    const std::vector<float> a = testing::all_logits(*ref, ids);

    const auto f32 = quantize(dir.path() / "hf", dir.path() / "tiny-f32.gguf", gguf::Mixture::kF32);
    auto got = testing::open_model(f32, ComputePrecision::kF32);
    CHECK(got->checkpoint().is_gguf());
    CHECK(got->config().hf_architecture == ref->config().hf_architecture);
    CHECK(got->checkpoint().model_id() == ref->checkpoint().model_id());
    CHECK(testing::max_abs_diff(a, testing::all_logits(*got, ids)) <= 1e-4f * max_abs(a));

    const auto q8 =
        quantize(dir.path() / "hf", dir.path() / "tiny-q8_0.gguf", gguf::Mixture::kQ8_0);
    auto q8_model = testing::open_model(q8, ComputePrecision::kF32);
    CHECK(q8_model->checkpoint().model_id() == ref->checkpoint().model_id());
    const std::vector<float> b = testing::all_logits(*q8_model, ids);
    double sum = 0.0;
    for (size_t i = 0; i < a.size(); ++i) sum += std::fabs(a[i] - b[i]);
    // GLM-4.5's router multiplies the expert weights by 2.5 (and this tiny
    // random model has no dense-dominated logits), so its Q8_0 error is
    // larger: 2.5% of the range on this seed (measured 1.1%).
    const double tolerance = std::string(arch) == "glm4_moe" ? 0.025 : 0.01;
    CHECK(sum / static_cast<double>(a.size()) <= tolerance * max_abs(a));
    CHECK(testing::max_abs_diff(a, b) > 0.0f);  // it is a different computation
  }
}

TEST_CASE("gguf runtime: a Q8_0 file stays close to bf16 and is used in place") {
  TempDir dir("gguf-q8");
  testing::write_model(SyntheticModelSpec{}, dir.path() / "hf");
  const auto gguf =
      quantize(dir.path() / "hf", dir.path() / "tiny-q8_0.gguf", gguf::Mixture::kQ8_0);
  auto ref = testing::open_model(dir.path() / "hf", ComputePrecision::kBF16);
  auto q8 = testing::open_model(gguf, ComputePrecision::kBF16);
  auto q8_exact = testing::open_model(gguf, ComputePrecision::kF32);
  const std::vector<int32_t> ids = prompt(ref->config().vocab_size);
  const std::vector<float> a = testing::all_logits(*ref, ids), b = testing::all_logits(*q8, ids);
  // The runtime computes the Q8_0 model almost exactly: its 16-bit
  // activations against the f32 reference of the same weights.
  CHECK(testing::max_abs_diff(testing::all_logits(*q8_exact, ids), b) <= 1e-3f * max_abs(a));
  // Q8_0 keeps ~8 bits per weight: on average within a percent of the
  // logits' range of bf16 on this random-weight model. (Not the maximum: a
  // token whose top-2 experts nearly tie may route differently and move
  // further; this seed has one.)
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::fabs(a[i] - b[i]);
  CHECK(sum / static_cast<double>(a.size()) <= 0.01 * max_abs(a));
  CHECK(testing::max_abs_diff(a, b) > 0.0f);  // it is a different computation
  // In the rows layout (no interleaved copies for this CPU's kernels,
  // kernels/interleave.h -- `dancemoe bench --rows-layout`), in place: the
  // experts point into the file's mapping and own no slot.
  RuntimeOptions rows;
  rows.precision = ComputePrecision::kBF16;
  rows.interleave_k = false;
  Result<std::unique_ptr<ModelRuntime>> in_place = ModelRuntime::open(gguf, rows);
  REQUIRE(in_place.is_ok());
  const ExpertStore& store = (*in_place)->experts();
  const std::vector<ExpertRef> keys = store.resident_keys();
  REQUIRE_FALSE(keys.empty());
  const auto w = store.get(keys[0]);
  const TensorLocation& gate =
      (*in_place)->checkpoint().tensor(TensorRole::kExpertGate, keys[0].layer, keys[0].expert);
  CHECK(w->gate.data == gate.mapped);
  CHECK(w->gate.type == kernels::WeightType::kQ8_0);
  CHECK(w->storage.data() == nullptr);
  CHECK((*in_place)->dense().layer(0).attention.q.data ==
        (*in_place)->checkpoint().tensor(TensorRole::kQ, 0).mapped);
  // The same integer sums as the interleaved copies, scaled in another order.
  const std::vector<float> c = testing::all_logits(**in_place, ids);
  CHECK(testing::max_abs_diff(c, b) <= 1e-3f * max_abs(a));
  // --copy-weights: the same numbers from copies.
  rows.copy_mapped_weights = true;
  Result<std::unique_ptr<ModelRuntime>> copied = ModelRuntime::open(gguf, rows);
  REQUIRE(copied.is_ok());
  CHECK((*copied)->experts().get(keys[0])->gate.data != gate.mapped);
  CHECK(testing::all_logits(**copied, ids) == c);
}

TEST_CASE("gguf runtime: --expert-type holds experts quantized, in sizes and transfers") {
  TempDir dir("expert-type");
  SyntheticModelSpec spec;
  testing::write_model(spec, dir.path() / "hf");
  RuntimeOptions options;
  options.precision = ComputePrecision::kBF16;
  options.expert_type = kernels::WeightType::kQ8_0;
  Result<std::unique_ptr<ModelRuntime>> model = ModelRuntime::open(dir.path() / "hf", options);
  REQUIRE_MESSAGE(model.is_ok(), model.status().to_string());
  ExpertStore& store = (*model)->experts();
  CHECK(store.held_type() == kernels::WeightType::kQ8_0);
  const Checkpoint& ckpt = (*model)->checkpoint();
  const ModelConfig& c = ckpt.config();
  const ExpertRef key = store.resident_keys().at(0);
  // 2 x [inter, hidden] + [hidden, inter] of Q8_0 rows.
  const uint64_t want = static_cast<uint64_t>(
      2 * c.moe_intermediate_size *
          kernels::weight_row_bytes(kernels::WeightType::kQ8_0, c.hidden_size) +
      c.hidden_size *
          kernels::weight_row_bytes(kernels::WeightType::kQ8_0, c.moe_intermediate_size));
  CHECK(store.expert_bytes(key) == want);
  CHECK(store.expert_bytes(key) < ckpt.expert_bytes(key.layer, key.expert));
  const auto w = store.get(key);
  CHECK(w->gate.type == kernels::WeightType::kQ8_0);
  CHECK(w->n_bytes == want);
  // What a transfer carries (the rows layout, however the store holds it).
  const std::vector<uint8_t> bytes = testing::expert_rows_bytes(*w);
  // The model has a manifest (of the bf16 bytes): converted bytes from a peer
  // cannot be checked against it and are refused; loads from the files are
  // checked before conversion.
  REQUIRE(ckpt.manifest() != nullptr);
  REQUIRE(store.evict(key));
  const Status refused = store.install(key, bytes);
  CHECK(refused.code() == StatusCode::kFailedPrecondition);
  CHECK(refused.message().find("cannot be checked") != std::string::npos);
  REQUIRE(store.load(key).is_ok());
  CHECK(testing::expert_rows_bytes(*store.get(key)) == bytes);

  // Without a manifest, installing the held bytes (a peer's transfer) gives
  // the same expert.
  std::filesystem::remove(dir.path() / "hf" / ExpertManifest::kFileName);
  Result<std::unique_ptr<ModelRuntime>> plain = ModelRuntime::open(dir.path() / "hf", options);
  REQUIRE_MESSAGE(plain.is_ok(), plain.status().to_string());
  ExpertStore& plain_store = (*plain)->experts();
  REQUIRE(plain_store.evict(key));
  REQUIRE(plain_store.install(key, bytes).is_ok());
  CHECK(testing::expert_rows_bytes(*plain_store.get(key)) == bytes);
  CHECK(plain_store
            .install({key.layer, (key.expert + 1) % static_cast<int32_t>(c.n_experts)},
                     std::vector<uint8_t>(bytes.size() + 1))
            .message()
            .find("weight bytes, got") != std::string::npos);
  // A type whose blocks fit neither dimension is refused by name.
  options.expert_type = kernels::WeightType::kQ4_K;
  Result<std::unique_ptr<ModelRuntime>> bad = ModelRuntime::open(dir.path() / "hf", options);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.status().message().find("--expert-type q4_K") != std::string::npos);
}

TEST_CASE("gguf runtime: an interleaving store holds Q4_K experts interleaved, rows in transfers") {
  // Forced on, whatever this CPU has: levels without the interleaved kernel
  // compute such matrices too (16 rows at a time in the rows layout).
  TempDir dir("gguf-q4k-store");
  SyntheticModelSpec spec;
  spec.preset = "small";  // 256-wide experts: whole Q4_K super-blocks
  const auto gguf =
      testing::write_gguf_model(spec, dir.path(), "small-q4_k_m.gguf", gguf::Mixture::kQ4_K_M);
  Result<std::unique_ptr<Checkpoint>> ckpt = Checkpoint::open(gguf);
  REQUIRE(ckpt.is_ok());
  ExpertStore plain(**ckpt);
  ExpertFormat format;
  format.interleave_k = true;
  ExpertStore interleaved(**ckpt, {-1}, format);
  const ExpertRef key{0, 3};
  REQUIRE(plain.load(key).is_ok());
  REQUIRE(interleaved.load(key).is_ok());
  const auto a = plain.get(key), b = interleaved.get(key);
  CHECK(a->storage.data() == nullptr);  // in place in the mapping
  CHECK(b->storage.data() != nullptr);  // a copy, interleaved
  CHECK(b->gate.type == kernels::WeightType::kQ4_K);
  CHECK(b->gate.layout == kernels::WeightLayout::kInterleaved16);
  CHECK(a->gate.layout == kernels::WeightLayout::kRows);
  // Q4_K_M keeps some ffn_down in Q6_K: interleaved too.
  for (const kernels::WeightView* v : {&b->up, &b->down}) {
    CHECK(v->layout == kernels::WeightLayout::kInterleaved16);
    CHECK((v->type == kernels::WeightType::kQ4_K || v->type == kernels::WeightType::kQ6_K));
  }
  // Same sizes; the transfer bytes are the file's.
  CHECK(b->n_bytes == a->n_bytes);
  CHECK(interleaved.expert_bytes(key) == plain.expert_bytes(key));
  const std::vector<uint8_t> bytes = testing::expert_rows_bytes(*b);
  CHECK(bytes == testing::expert_rows_bytes(*a));
  CHECK(std::memcmp(a->gate.data, b->gate.data, 1024) != 0);  // not the same layout
  // A peer's rows install as interleaved again, bit for bit.
  REQUIRE(interleaved.evict(key));
  REQUIRE(interleaved.install(key, bytes).is_ok());
  const auto c = interleaved.get(key);
  CHECK(c->gate.layout == kernels::WeightLayout::kInterleaved16);
  CHECK(std::memcmp(c->gate.data, b->gate.data,
                    static_cast<size_t>(kernels::weight_view_bytes(b->gate))) == 0);
  CHECK(testing::expert_rows_bytes(*c) == bytes);
}

// The small preset written as a GGUF of `mixture` and opened twice in bf16
// compute: `on` with the layouts this CPU's kernels prefer (the default),
// `off` with the file's rows (--rows-layout).
struct LayoutPair {
  LayoutPair(const std::string& file, gguf::Mixture mixture) {
    SyntheticModelSpec spec;
    spec.preset = "small";
    const auto gguf = testing::write_gguf_model(spec, dir.path(), file, mixture);
    RuntimeOptions options;
    options.precision = ComputePrecision::kBF16;
    Result<std::unique_ptr<ModelRuntime>> a = ModelRuntime::open(gguf, options);
    REQUIRE_MESSAGE(a.is_ok(), a.status().to_string());
    on = std::move(a).value();
    options.interleave_k = false;
    Result<std::unique_ptr<ModelRuntime>> b = ModelRuntime::open(gguf, options);
    REQUIRE_MESSAGE(b.is_ok(), b.status().to_string());
    off = std::move(b).value();
  }
  TempDir dir{"gguf-layouts"};
  std::unique_ptr<ModelRuntime> on, off;
};

TEST_CASE("gguf runtime: Q4_K / Q6_K interleaved where the CPU has the kernel, the same logits") {
  LayoutPair m("small-q4_k_m.gguf", gguf::Mixture::kQ4_K_M);
  ModelRuntime& on = *m.on;
  ModelRuntime& off = *m.off;
  const bool kernel = kernels::cpu_kernels().interleaved_k;
  INFO("this CPU's level has the interleaved kernel: ", kernel);
  CHECK(on.experts().format().interleave_k == kernel);
  CHECK_FALSE(off.experts().format().interleave_k);
  const auto layout = [](const ModelRuntime& model) {
    return model.dense().layer(0).attention.q.layout;
  };
  CHECK((layout(on) == kernels::WeightLayout::kInterleaved16) == kernel);
  CHECK(layout(off) == kernels::WeightLayout::kRows);
  // The embedding's rows are read one at a time: never interleaved.
  CHECK(on.dense().embed().layout == kernels::WeightLayout::kRows);
  const std::vector<int32_t> ids = prompt(on.config().vocab_size);
  const std::vector<float> a = testing::all_logits(off, ids);
  const std::vector<float> b = testing::all_logits(on, ids);
  // The same integer sums, only the f32 order differs: the first position
  // agrees to float rounding. A later one may not: a token whose top-k
  // experts nearly tie can route differently on a rounding difference (this
  // seed has one at position 5), and later positions attend to it -- so the
  // rest is held to an average, as the Q8_0 test above.
  testing::check_same_computation(a, b, static_cast<size_t>(on.config().vocab_size), 1e-5f);
  CHECK(on.resident_weight_bytes() == off.resident_weight_bytes());
}

TEST_CASE(
    "gguf runtime: bf16 experts of a GGUF are interleaved copies where the CPU has the kernel") {
  LayoutPair m("small-bf16.gguf", gguf::Mixture::kBF16);
  ModelRuntime& on = *m.on;
  ModelRuntime& off = *m.off;
  const bool kernel = kernels::cpu_kernels().interleaved_bf16;
  INFO("this CPU's level has the interleaved bf16 kernel: ", kernel);
  const ExpertFormat& format = on.experts().format();
  CHECK(format.interleave_bf16 == kernel);
  CHECK(format.copy_mapped == kernel);  // interleaved experts are copies: the file is copied whole
  CHECK_FALSE(off.experts().format().copy_mapped);
  const auto held = on.experts().get({0, 0});
  REQUIRE(held != nullptr);
  CHECK(held->gate.type == kernels::WeightType::kBF16);
  CHECK((held->gate.layout == kernels::WeightLayout::kInterleaved16) == kernel);
  CHECK((held->storage.data() != nullptr) == kernel);  // in place in the mapping otherwise
  const auto in_place = off.experts().get({0, 0});
  CHECK(in_place->storage.data() == nullptr);
  CHECK(testing::expert_rows_bytes(*held) == testing::expert_rows_bytes(*in_place));
  // As model_runtime_test: a different order of the same bf16 products.
  const std::vector<int32_t> ids = prompt(on.config().vocab_size);
  const std::vector<float> a = testing::all_logits(off, ids);
  const std::vector<float> b = testing::all_logits(on, ids);
  testing::check_same_computation(a, b, static_cast<size_t>(on.config().vocab_size), 1e-2f);
}

}  // namespace
}  // namespace dancemoe
