// ExpertComputer over several devices: each job runs on the engine of its
// device, devices concurrently, and the sum is the one-device sum (up to
// float re-association of the per-device partials).
#include "common/inference/expert_compute.h"

#include <doctest/doctest.h>

#include <random>

#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/inference/expert_store.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

// Jobs for experts 0..5 of layer `layer`, expert e on device e % n_devices.
std::vector<ExpertJob> make_jobs(const ExpertStore& store, int32_t layer, int n_devices,
                                 int64_t n_tokens, std::mt19937& rng) {
  std::vector<ExpertJob> jobs;
  for (int32_t e = 0; e < 6; ++e) {
    auto w = store.get({layer, e});
    REQUIRE(w != nullptr);
    ExpertJob job;
    assign_expert(*w, &job);
    job.device = e % n_devices;
    for (int32_t t = 0; t < n_tokens; ++t) {
      if ((t + e) % 3 == 0) continue;
      job.tokens.push_back(t);
      job.weights.push_back(std::uniform_real_distribution<float>(0.1f, 0.9f)(rng));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

TEST_CASE("expert computer: jobs on two CPU devices sum to what one device computes") {
  testing::TempDir dir("compute");
  testing::write_model(testing::tiny_spec(21), dir.path());
  auto model = testing::open_model(dir.path());
  const int64_t H = model->config().hidden_size;
  ThreadPool pool_a(1), pool_b(1), pool_one(2);
  std::vector<std::unique_ptr<ExpertEngine>> engines;
  engines.push_back(std::make_unique<backend::CpuExpertEngine>(pool_a, ComputePrecision::kF32));
  engines.push_back(std::make_unique<backend::CpuExpertEngine>(pool_b, ComputePrecision::kF32));
  ExpertComputer two(std::move(engines));
  ExpertComputer one(std::make_unique<backend::CpuExpertEngine>(pool_one, ComputePrecision::kF32));
  CHECK(two.n_devices() == 2);
  CHECK(two.describe().find(" + ") != std::string::npos);
  std::mt19937 rng(3);
  for (int64_t n_tokens : {1, 7, 40}) {
    CAPTURE(n_tokens);
    std::vector<ExpertJob> split = make_jobs(model->experts(), 2, 2, n_tokens, rng);
    std::vector<ExpertJob> single = split;
    for (ExpertJob& j : single) j.device = 0;
    std::vector<float> x(static_cast<size_t>(n_tokens * H));
    for (float& v : x) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
    std::vector<float> want(x.size(), 0.25f), got(x.size(), 0.25f);
    one.run(single, x.data(), n_tokens, H, want.data());
    two.run(split, x.data(), n_tokens, H, got.data());
    CHECK(testing::max_abs_diff(want, got) <= 1e-5f);
    const std::vector<double>& busy = two.last_device_us();
    REQUIRE(busy.size() == 2);
    CHECK(busy[0] > 0);
    CHECK(busy[1] > 0);
    // Repeated runs reuse the launcher and give the same bits.
    std::vector<float> again(x.size(), 0.25f);
    two.run(split, x.data(), n_tokens, H, again.data());
    CHECK(again == got);
  }
}

TEST_CASE("expert computer: a device without jobs is idle and reports no time") {
  testing::TempDir dir("compute-idle");
  testing::write_model(testing::tiny_spec(21), dir.path());
  auto model = testing::open_model(dir.path());
  const int64_t H = model->config().hidden_size;
  ThreadPool pool_a(1), pool_b(1);
  std::vector<std::unique_ptr<ExpertEngine>> engines;
  engines.push_back(std::make_unique<backend::CpuExpertEngine>(pool_a, ComputePrecision::kF32));
  engines.push_back(std::make_unique<backend::CpuExpertEngine>(pool_b, ComputePrecision::kF32));
  ExpertComputer two(std::move(engines));
  std::mt19937 rng(4);
  std::vector<ExpertJob> jobs = make_jobs(model->experts(), 2, 1, 5, rng);
  for (ExpertJob& j : jobs) j.device = 1;  // all on the second device
  std::vector<float> x(static_cast<size_t>(5 * H), 0.5f), out(x.size(), 0.0f);
  two.run(jobs, x.data(), 5, H, out.data());
  CHECK(two.last_device_us()[0] == 0);
  CHECK(two.last_device_us()[1] > 0);
  double norm = 0;
  for (float v : out) norm += std::abs(v);
  CHECK(norm > 0);
}

}  // namespace
}  // namespace dancemoe
