// The one assembly of the runtime: a model opened on two CPU devices (two
// slices of this machine's cores) computes what it computes on one, holds
// each expert on the device it was given, and refuses what cannot fit
// before reading a weight; bf16 experts are interleaved where the CPU has
// the kernel for them, and compute the same logits.
#include "common/assembly/model_runtime.h"

#include <doctest/doctest.h>

#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

Result<std::unique_ptr<ModelRuntime>> open(const std::filesystem::path& dir,
                                           const std::string& devices,
                                           RuntimeOptions options = {}) {
  options.precision = ComputePrecision::kF32;
  options.devices.devices = *backend::parse_device_list(devices);
  return ModelRuntime::open(dir, options);
}

std::vector<float> logits_of(ModelRuntime& m, const std::vector<int32_t>& ids) {
  auto cache = m.transformer().new_cache(static_cast<int64_t>(ids.size()));
  REQUIRE(cache.is_ok());
  std::vector<float> logits;
  REQUIRE(m.transformer().forward(ids, *cache, LogitsMode::kAll, &logits).is_ok());
  return logits;
}

TEST_CASE("model runtime: two CPU devices compute what one does, experts spread over both") {
  testing::TempDir dir("runtime-two");
  testing::write_model(testing::tiny_spec(8), dir.path());
  auto one = open(dir.path(), "cpu");
  REQUIRE_MESSAGE(one.is_ok(), one.status().to_string());
  auto two = open(dir.path(), "cpu:0,cpu:1");
  REQUIRE_MESSAGE(two.is_ok(), two.status().to_string());
  REQUIRE((*two)->devices().size() == 2);
  CHECK((*two)->devices()[0].name == "cpu:0");
  CHECK((*two)->devices()[1].name == "cpu:1");
  CHECK((*two)->devices()[0].cpus != (*two)->devices()[1].cpus);
  CHECK((*two)->expert_computer().n_devices() == 2);
  const std::vector<int64_t> held = (*two)->experts().n_resident_by_device();
  CHECK(held[0] > 0);
  CHECK(held[1] > 0);
  CHECK(held[0] + held[1] == (*one)->experts().n_resident());
  const std::vector<int32_t> ids = {1, 5, 9, 200, 17, 3, 3, 44};
  CHECK(testing::max_abs_diff(logits_of(**one, ids), logits_of(**two, ids)) <= 1e-4f);
}

TEST_CASE("model runtime: initial experts go to the devices they are given, and can move") {
  testing::TempDir dir("runtime-place");
  testing::write_model(testing::tiny_spec(8), dir.path());
  RuntimeOptions options;
  options.experts = std::vector<ExpertRef>{{2, 0}, {2, 1}, {2, 2}};
  options.expert_devices = {1, 0, 1};
  auto m = open(dir.path(), "cpu:0,cpu:1", options);
  REQUIRE_MESSAGE(m.is_ok(), m.status().to_string());
  CHECK((*m)->experts().get({2, 0})->device == 1);
  CHECK((*m)->experts().get({2, 1})->device == 0);
  REQUIRE((*m)->experts().load({2, 0}, 0).is_ok());  // a move between devices
  CHECK((*m)->experts().get({2, 0})->device == 0);
  CHECK((*m)->experts().n_resident() == 3);
  CHECK((*m)->experts().n_resident_by_device() == std::vector<int64_t>{2, 1});
  CHECK((*m)->device_index("cpu:1") == 1);
  CHECK((*m)->device_index("cuda:0") == -1);
  // Each new computer has engines of its own on both devices.
  auto extra = (*m)->new_expert_computer(1);
  REQUIRE(extra.is_ok());
  CHECK((*extra)->n_devices() == 2);
}

TEST_CASE("model runtime: budgets too small or too large are refused before loading") {
  testing::TempDir dir("runtime-budget");
  testing::write_model(testing::tiny_spec(8), dir.path());
  RuntimeOptions small;
  small.devices.expert_memory["cpu:1"] = 1000;
  small.devices.expert_memory["cpu:0"] = 1000;
  auto m = open(dir.path(), "cpu:0,cpu:1", small);
  REQUIRE_FALSE(m.is_ok());
  CHECK(m.status().code() == StatusCode::kResourceExhausted);
  CHECK(m.status().message().find("the experts to load need") != std::string::npos);
  CHECK(m.status().message().find("--devices cpu:0,cpu:1") != std::string::npos);
  RuntimeOptions huge;
  huge.devices.expert_memory["cpu"] = uint64_t{1} << 60;
  m = open(dir.path(), "cpu", huge);
  REQUIRE_FALSE(m.is_ok());
  CHECK(m.status().message().find("cpu: --device-memory asks for") != std::string::npos);
  RuntimeOptions slices;
  m = open(dir.path(), "cpu:0,cpu:7", slices);
  REQUIRE_FALSE(m.is_ok());
  CHECK(m.status().message().find("cpu:7") != std::string::npos);
}

TEST_CASE("model runtime: a bf16 KV cache is a CPU choice, with a GPU refused by name") {
  testing::TempDir dir("runtime-kv");
  testing::write_model(testing::tiny_spec(8), dir.path());
  RuntimeOptions options;
  options.kv_element = KvElement::kBF16;
  auto cpu = open(dir.path(), "cpu", options);
  REQUIRE_MESSAGE(cpu.is_ok(), cpu.status().to_string());
  auto cache = (*cpu)->transformer().new_cache(4);
  REQUIRE(cache.is_ok());
  CHECK(cache->element() == KvElement::kBF16);
  // Checked before any device is looked for, so this holds without a GPU.
  options.precision = ComputePrecision::kBF16;
  options.devices.devices = *backend::parse_device_list("cuda:0");
  auto gpu = ModelRuntime::open(dir.path(), options);
  REQUIRE_FALSE(gpu.is_ok());
  CHECK(gpu.status().message().find("--kv-type bf16") != std::string::npos);
}

TEST_CASE("model runtime: bf16 experts interleaved where the CPU has the kernel, the same logits") {
  testing::TempDir dir("runtime-bf16-interleaved");
  SyntheticModelSpec spec;
  spec.preset = "small";
  testing::write_model(spec, dir.path());
  RuntimeOptions options;
  options.precision = ComputePrecision::kBF16;
  auto on = ModelRuntime::open(dir.path(), options);
  REQUIRE_MESSAGE(on.is_ok(), on.status().to_string());
  options.interleave_k = false;  // --rows-layout
  auto off = ModelRuntime::open(dir.path(), options);
  REQUIRE_MESSAGE(off.is_ok(), off.status().to_string());
  const bool kernel = kernels::cpu_kernels().interleaved_bf16;
  INFO("this CPU's level has the interleaved bf16 kernel: ", kernel);
  CHECK((*on)->experts().format().interleave_bf16 == kernel);
  CHECK_FALSE((*off)->experts().format().interleave_bf16);
  const auto expert_layout = [](const ModelRuntime& m) {
    return m.experts().get({0, 0})->gate.layout;
  };
  CHECK((expert_layout(**on) == kernels::WeightLayout::kInterleaved16) == kernel);
  CHECK(expert_layout(**off) == kernels::WeightLayout::kRows);
  CHECK(((*on)->description().find("interleaved by 16 rows") != std::string::npos) == kernel);
  // Dense bf16 matrices stay in rows (model_runtime.cpp says why).
  CHECK((*on)->dense().layer(0).attention.q.layout == kernels::WeightLayout::kRows);
  // A different order of the same bf16 products: f32 sums that differ in
  // their last bits, and activations rounded to bf16 before each matmul
  // turn a few of those into one bf16 step (0.4 %) -- so the first
  // position is held to 1 % of the logits' size, and the rest (where a
  // near-tie may route differently) to 1 % on average. A matrix read in the
  // wrong layout gives noise of the logits' size.
  const std::vector<int32_t> ids = {1, 5, 9, 200, 17, 3, 3, 44, 1000};
  const std::vector<float> a = logits_of(**off, ids), b = logits_of(**on, ids);
  testing::check_same_computation(a, b, static_cast<size_t>((*on)->config().vocab_size), 1e-2f);
  CHECK((*on)->resident_weight_bytes() == (*off)->resident_weight_bytes());
}

}  // namespace
}  // namespace dancemoe
