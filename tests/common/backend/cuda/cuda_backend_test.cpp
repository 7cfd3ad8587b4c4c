// The CUDA backend's load-time contract and its ExpertEngine: out-of-memory
// is a clear error (device, bytes wanted, bytes free), bad selections are
// refused, and ExpertComputer jobs given in host memory are computed on the
// GPU like the CPU engine computes them (jobs whose weights no device holds
// fall back to the CPU). Skips (with a message) without a GPU.
#include <doctest/doctest.h>

#include <random>

#include "common/assembly/model_runtime.h"
#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/backend/cuda/device_weights.h"
#include "common/inference/moe_executor.h"
#include "common/model/checkpoint.h"
#include "kernels/cpu/numeric.h"
#include "tests/kernels/cuda/cuda_test_support.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::testing {
namespace {

SyntheticModelSpec small() {
  SyntheticModelSpec s;
  s.preset = "small";
  s.seed = 4;
  s.write_tokenizer = false;
  return s;
}

Result<std::unique_ptr<ModelRuntime>> open_with(
    const std::filesystem::path& dir, backend::DeviceOptions devices,
    ComputePrecision precision = ComputePrecision::kBF16) {
  RuntimeOptions options;
  options.devices.n_threads = 2;
  options.precision = precision;
  options.devices = std::move(devices);
  return ModelRuntime::open(dir, options);
}

TEST_CASE("cuda backend: too little memory names the device, bytes wanted and bytes free") {
  DMOE_REQUIRE_CUDA();
  TempDir dir("cuda-oom");
  write_model(small(), dir.path());
  backend::DeviceOptions devices;
  devices.devices = *backend::parse_device_list("cuda:0");
  devices.expert_memory["cuda:0"] = 1 << 20;
  Result<std::unique_ptr<ModelRuntime>> m = open_with(dir.path(), devices);
  REQUIRE_FALSE(m.is_ok());
  MESSAGE("budget message: " << m.status().message());
  CHECK(m.status().code() == StatusCode::kResourceExhausted);
  CHECK(m.status().message().find("--devices cuda:0") != std::string::npos);
  CHECK(m.status().message().find("1048576 bytes") != std::string::npos);

  // A KV cache no GPU has room for: the dense part does not fit.
  devices.expert_memory.clear();
  devices.kv_cache_tokens = int64_t{1} << 32;
  m = open_with(dir.path(), devices);
  REQUIRE_FALSE(m.is_ok());
  MESSAGE("dense message: " << m.status().message());
  CHECK(m.status().code() == StatusCode::kResourceExhausted);
  CHECK(m.status().message().find("cuda:0: the dense part does not fit") != std::string::npos);
  CHECK(m.status().message().find("free") != std::string::npos);
}

// --device-memory cuda:0 of exactly half the experts' bytes (what
// bench_cuda_model's cuda:0,cpu variant asks): the budget covers the
// experts, and the expert tables and engine workspace come beside them (they
// were once charged to it, and the last allocation of the load failed);
// the expert service's engines, made after load, come on top.
TEST_CASE("cuda backend: an expert budget of exactly half the experts loads, workers on top") {
  DMOE_REQUIRE_CUDA();
  TempDir dir("cuda-half");
  write_model(small(), dir.path());
  auto checkpoint = Checkpoint::open(dir.path());
  REQUIRE(checkpoint.is_ok());
  const ModelConfig& c = (*checkpoint)->config();
  const uint64_t half = static_cast<uint64_t>(c.n_moe_layers() * c.n_experts / 2) *
                        backend::cuda::DeviceWeights::expert_bytes(c);
  backend::DeviceOptions devices;
  devices.devices = *backend::parse_device_list("cuda:0,cpu");
  devices.expert_memory["cuda:0"] = half;
  Result<std::unique_ptr<ModelRuntime>> m = open_with(dir.path(), devices);
  REQUIRE_MESSAGE(m.is_ok(), m.status().to_string());
  MESSAGE((*m)->description());
  CHECK((*m)->description().find(std::to_string(c.n_moe_layers() * c.n_experts / 2) + " experts") !=
        std::string::npos);
  for (int worker = 0; worker < 3; ++worker) {
    auto computer = (*m)->new_expert_computer(1);
    CHECK_MESSAGE(computer.is_ok(), computer.status().to_string());
  }
  Transformer& tf = (*m)->transformer();
  auto cache = tf.new_cache(16);
  REQUIRE(cache.is_ok());
  const std::vector<int32_t> ids = {5, 9, 13, 17, 21, 25, 29, 33};
  std::vector<float> logits;
  CHECK(tf.forward(ids, *cache, LogitsMode::kLast, &logits).is_ok());
  CHECK(logits.size() == static_cast<size_t>(c.vocab_size));
}

// Latent attention runs (cuda_forward_test.cpp); a latent wider than its
// kernels take is refused at load, naming the block and the limit.
TEST_CASE("cuda backend: a model using blocks the CUDA kernels lack is refused naming them") {
  DMOE_REQUIRE_CUDA();
  const std::pair<const char*, const char*> cases[] = {
      {"deepseek_v2", "multi-head latent attention (MLA) with kv_lora_rank 2048"},
      {"deepseek_v3", "multi-head latent attention (MLA) with kv_lora_rank 2048"}};
  for (const auto& [arch, block] : cases) {
    CAPTURE(arch);
    TempDir dir("cuda-blocks");
    SyntheticModelSpec spec = small();
    spec.arch = arch;
    spec.preset = "tiny";
    spec.config_overrides = {{"kv_lora_rank", "2048"}};
    write_model(spec, dir.path());
    backend::DeviceOptions devices;
    devices.devices = *backend::parse_device_list("cuda:0");
    Result<std::unique_ptr<ModelRuntime>> m = open_with(dir.path(), devices);
    REQUIRE_FALSE(m.is_ok());
    MESSAGE("refusal: " << m.status().message());
    CHECK(m.status().message().find(block) != std::string::npos);
    CHECK(m.status().message().find("run it on the CPU devices") != std::string::npos);
  }
}

TEST_CASE("cuda backend: a missing device and f32 precision are refused") {
  DMOE_REQUIRE_CUDA();
  TempDir dir("cuda-bad");
  write_model(small(), dir.path());
  backend::DeviceOptions devices;
  devices.devices = *backend::parse_device_list("cuda:63");
  Result<std::unique_ptr<ModelRuntime>> m = open_with(dir.path(), devices);
  REQUIRE_FALSE(m.is_ok());
  CHECK(m.status().code() == StatusCode::kUnavailable);
  CHECK(m.status().message().find("cuda:63") != std::string::npos);

  devices.devices = *backend::parse_device_list("cuda:0");
  m = open_with(dir.path(), devices, ComputePrecision::kF32);
  REQUIRE_FALSE(m.is_ok());
  CHECK(m.status().message().find("--precision bf16") != std::string::npos);
}

TEST_CASE("cuda expert engine: host jobs match the CPU engine, unknown experts run on the CPU") {
  DMOE_REQUIRE_CUDA();
  TempDir dir("cuda-engine");
  write_model(small(), dir.path());
  backend::DeviceOptions devices;
  devices.devices = *backend::parse_device_list("cuda:0");
  Result<std::unique_ptr<ModelRuntime>> gpu = open_with(dir.path(), devices);
  REQUIRE_MESSAGE(gpu.is_ok(), gpu.status().to_string());
  ModelRuntime& m = **gpu;
  const ModelConfig& c = m.config();
  backend::CpuExpertEngine cpu_engine(m.forward_pool(), ComputePrecision::kBF16);

  std::mt19937 rng(77);
  // A host-only expert (same shape, its own weights): no device holds it.
  const int64_t I = c.moe_intermediate_size, H = c.hidden_size;
  std::vector<uint16_t> stray(static_cast<size_t>(3 * I * H));
  for (uint16_t& w : stray)
    w = kernels::float_to_bf16(std::uniform_real_distribution<float>(-0.05f, 0.05f)(rng));
  for (int64_t n_tokens : {1, 5, 70, 150}) {
    CAPTURE(n_tokens);
    std::vector<ExpertJob> jobs;
    for (int32_t e = 0; e < 6; ++e) {
      auto w = m.experts().get({1, e * 2});
      REQUIRE(w != nullptr);
      ExpertJob job{w->gate, w->up, w->down, {}, {}, 0};
      for (int32_t t = 0; t < n_tokens; ++t) {
        if ((t + e) % 3 != 0) {
          job.tokens.push_back(t);
          job.weights.push_back(std::uniform_real_distribution<float>(0.1f, 0.9f)(rng));
        }
      }
      jobs.push_back(std::move(job));
    }
    ExpertJob host_only{{stray.data(), kernels::WeightType::kBF16, I, H},
                        {stray.data() + I * H, kernels::WeightType::kBF16, I, H},
                        {stray.data() + 2 * I * H, kernels::WeightType::kBF16, H, I},
                        {0},
                        {0.5f},
                        0};
    jobs.push_back(host_only);
    jobs.push_back(ExpertJob{jobs[0].gate, jobs[0].up, jobs[0].down, {}, {}, 0});  // empty job
    const std::vector<float> x = random_floats(rng, static_cast<size_t>(n_tokens * H), -2.0f, 2.0f);
    std::vector<float> want = random_floats(rng, static_cast<size_t>(n_tokens * H));
    std::vector<float> got = want;
    cpu_engine.begin(jobs, x.data(), n_tokens, H, want.data());
    cpu_engine.finish();
    ExpertComputer& gpu_computer = m.expert_computer();
    gpu_computer.begin(jobs, x.data(), n_tokens, H, got.data());
    gpu_computer.finish();
    const double err = normalised_error(got, want);
    MESSAGE("cuda expert engine, " << n_tokens << " tokens: normalised error " << err);
    CHECK(err < 2e-3);
  }
}

}  // namespace
}  // namespace dancemoe::testing
