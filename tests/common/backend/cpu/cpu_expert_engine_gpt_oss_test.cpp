// The CPU expert engine on gpt-oss's experts: MXFP4 weights computed in
// place, biases before the activation and after down, the clamped SwiGLU --
// against the expert written out from its dequantized weights.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/backend/cpu/cpu_expert_engine.h"
#include "common/inference/expert_store.h"
#include "kernels/quantize.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/paths.h"

namespace dancemoe {
namespace {

std::vector<float> widen(const kernels::WeightView& w) {
  std::vector<float> out(static_cast<size_t>(w.rows * w.cols));
  kernels::dequantize_values(w.type, w.data, w.rows * w.cols, out.data());
  return out;
}

// out += weight * (down(act(gate x + bg, up x + bu)) + bd), in double.
void reference_expert(const ExpertWeights& w, const float* x, float weight, int64_t hidden,
                      std::vector<double>* out) {
  const std::vector<float> gate = widen(w.gate), up = widen(w.up), down = widen(w.down);
  const int64_t inter = w.gate.rows;
  const ExpertFfn& f = w.ffn;
  std::vector<double> act(static_cast<size_t>(inter));
  for (int64_t i = 0; i < inter; ++i) {
    double g = f.gate_bias[i], u = f.up_bias[i];
    for (int64_t c = 0; c < hidden; ++c) {
      g += static_cast<double>(gate[static_cast<size_t>(i * hidden + c)]) * x[c];
      u += static_cast<double>(up[static_cast<size_t>(i * hidden + c)]) * x[c];
    }
    g = std::min<double>(g, f.limit);
    u = std::clamp<double>(u, -f.limit, f.limit);
    act[static_cast<size_t>(i)] = (u + 1.0) * g / (1.0 + std::exp(-f.alpha * g));
  }
  for (int64_t r = 0; r < hidden; ++r) {
    double y = f.down_bias[r];
    for (int64_t i = 0; i < inter; ++i) {
      y += static_cast<double>(down[static_cast<size_t>(r * inter + i)]) *
           act[static_cast<size_t>(i)];
    }
    (*out)[static_cast<size_t>(r)] += weight * y;
  }
}

TEST_CASE("cpu expert engine: gpt-oss experts -- MXFP4 in place, biases, clamped SwiGLU") {
  testing::TempDir dir("gpt_oss_engine");
  SyntheticModelSpec spec;
  spec.arch = "gpt_oss";
  spec.preset = "tiny";
  spec.seed = 9;
  spec.write_tokenizer = false;
  testing::write_model(spec, dir.path());
  auto ckpt = Checkpoint::open(dir.path());
  REQUIRE(ckpt.is_ok());
  ExpertStore store(**ckpt);
  const int64_t hidden = (*ckpt)->config().hidden_size;
  std::vector<ExpertJob> jobs;
  std::vector<std::shared_ptr<const ExpertWeights>> held;
  const int64_t n_tokens = 6;
  std::mt19937 rng(5);
  for (int32_t e : {1, 6}) {
    REQUIRE(store.load({2, e}).is_ok());
    held.push_back(store.get({2, e}));
    const ExpertWeights& w = *held.back();
    CHECK(w.gate.type == kernels::WeightType::kMXFP4);
    CHECK(w.down.type == kernels::WeightType::kMXFP4);
    CHECK(w.n_bytes == (*ckpt)->expert_bytes(2, e));
    REQUIRE(w.ffn.clamped);
    REQUIRE(w.ffn.gate_bias != nullptr);
    REQUIRE(w.ffn.down_bias != nullptr);
    ExpertJob job;
    assign_expert(w, &job);
    for (int32_t t = e % 2; t < n_tokens; t += 1 + e % 2) {
      job.tokens.push_back(t);
      job.weights.push_back(std::uniform_real_distribution<float>(0.2f, 0.8f)(rng));
    }
    jobs.push_back(std::move(job));
  }
  // Large inputs, so that some gate / up values pass the limit.
  std::vector<float> x(static_cast<size_t>(n_tokens * hidden));
  for (float& v : x) v = std::uniform_real_distribution<float>(-6.0f, 6.0f)(rng);
  std::vector<double> want(x.size(), 0.0);
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (size_t i = 0; i < jobs[j].tokens.size(); ++i) {
      const int64_t t = jobs[j].tokens[i];
      std::vector<double> row(static_cast<size_t>(hidden), 0.0);
      reference_expert(*held[j], x.data() + t * hidden, jobs[j].weights[i], hidden, &row);
      for (int64_t c = 0; c < hidden; ++c) want[static_cast<size_t>(t * hidden + c)] += row[c];
    }
  }
  double max_ref = 0.0;
  for (double v : want) max_ref = std::max(max_ref, std::fabs(v));
  for (ComputePrecision precision : {ComputePrecision::kF32, ComputePrecision::kBF16}) {
    CAPTURE(static_cast<int>(precision));
    ThreadPool pool(2);
    backend::CpuExpertEngine engine(pool, precision);
    std::vector<float> got(x.size(), 0.0f);
    engine.begin(jobs, x.data(), n_tokens, hidden, got.data());
    engine.finish();
    double max_diff = 0.0;
    for (size_t i = 0; i < got.size(); ++i)
      max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
    // f32: exact weights, f32 sums; bf16: int8 activations against MXFP4.
    CHECK(max_diff / max_ref <= (precision == ComputePrecision::kF32 ? 1e-5 : 0.03));
  }
}

}  // namespace
}  // namespace dancemoe
