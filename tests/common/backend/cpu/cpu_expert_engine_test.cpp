// CpuExpertEngine's two work splits (cpu_expert_engine.h): decode batches
// (a few tokens on each of many experts) run one job per chunk, other batches
// row slices of each job in three pool calls; both must give the same bits.
#include "common/backend/cpu/cpu_expert_engine.h"

#include <doctest/doctest.h>

#include <random>

#include "common/inference/expert_store.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe::backend {
namespace {

std::unique_ptr<ModelRuntime> open_tiny(const std::filesystem::path& dir,
                                        ComputePrecision precision,
                                        std::optional<kernels::WeightType> expert_type) {
  RuntimeOptions options;
  options.precision = precision;
  options.devices.n_threads = 2;
  options.expert_type = expert_type;
  Result<std::unique_ptr<ModelRuntime>> model = ModelRuntime::open(dir, options);
  INFO(model.status().to_string());
  REQUIRE(model.is_ok());
  return std::move(model).value();
}

TEST_CASE("cpu expert engine: one job per chunk at decode gives the bits of row slices") {
  testing::TempDir dir("cpu-engine");
  testing::write_model(testing::tiny_spec(5), dir.path());
  struct Mode {
    ComputePrecision precision;
    std::optional<kernels::WeightType> expert_type;
  };
  for (const Mode mode :
       {Mode{ComputePrecision::kF32, std::nullopt}, Mode{ComputePrecision::kBF16, std::nullopt},
        Mode{ComputePrecision::kBF16, kernels::WeightType::kQ8_0}}) {
    CAPTURE(static_cast<int>(mode.precision));
    auto model = open_tiny(dir.path(), mode.precision, mode.expert_type);
    const int64_t H = model->config().hidden_size;
    const int64_t n_experts = model->config().n_experts;
    REQUIRE(n_experts >= 4);  // two jobs per thread of a 2-thread pool
    std::mt19937 rng(11);
    for (int64_t n_tokens : {1, 3}) {
      CAPTURE(n_tokens);
      // Every expert of layer 0 serves every token, with its own weights.
      std::vector<ExpertJob> jobs;
      for (int32_t e = 0; e < n_experts; ++e) {
        auto w = model->experts().get({0, e});
        REQUIRE(w != nullptr);
        ExpertJob job;
        assign_expert(*w, &job);
        for (int32_t t = 0; t < n_tokens; ++t) {
          job.tokens.push_back(t);
          job.weights.push_back(std::uniform_real_distribution<float>(0.1f, 0.9f)(rng));
        }
        jobs.push_back(std::move(job));
      }
      std::vector<float> x(static_cast<size_t>(n_tokens * H));
      for (float& v : x) v = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);

      ThreadPool pool(2);
      CpuExpertEngine engine(pool, mode.precision);
      std::vector<float> by_job(x.size(), 0.5f);
      engine.begin(jobs, x.data(), n_tokens, H, by_job.data());
      engine.finish();
      // One job at a time (a single job is always cut into row slices),
      // added in the same order.
      std::vector<float> by_slice(x.size(), 0.5f);
      for (const ExpertJob& job : jobs) {
        engine.begin(std::span<const ExpertJob>(&job, 1), x.data(), n_tokens, H, by_slice.data());
        engine.finish();
      }
      CHECK(by_job == by_slice);
      CHECK(testing::max_abs_diff(by_job, std::vector<float>(x.size(), 0.5f)) > 0.0f);
    }
  }
}

}  // namespace
}  // namespace dancemoe::backend
