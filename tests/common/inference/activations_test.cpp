// matmul_rows picks the kernel its weights and path call for: with
// block-format weights in bf16 mode, kExactWeights always runs the integer
// kernel (W used exactly), kFastest lets matmul_quantized choose (on the
// AVX-512 BF16 level it rounds W to bf16 from quant_gemm_min_tokens).
#include "common/inference/activations.h"

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/quant_format.h"
#include "kernels/quantize.h"

namespace dancemoe {
namespace {

using kernels::WeightType;

TEST_CASE("activations: kExactWeights keeps block-format weights on the integer kernel") {
  const kernels::CpuKernels& k = kernels::cpu_kernels();
  const WeightType type = WeightType::kQ8_0;
  const int64_t rows = 48, cols = 256, n_tokens = 40;  // past every bf16 GEMM threshold
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> wf(static_cast<size_t>(rows * cols));
  for (float& v : wf) v = dist(rng);
  std::vector<uint8_t> w(static_cast<size_t>(rows * kernels::weight_row_bytes(type, cols)));
  kernels::quantize_rows(type, wf.data(), rows, cols, w.data());
  const kernels::WeightView view{w.data(), type, rows, cols};

  ActivationBuffer x;
  x.resize(n_tokens, cols, ComputePrecision::kBF16);
  for (int64_t i = 0; i < n_tokens * cols; ++i) x.f32()[i] = dist(rng);
  x.prepare(k, n_tokens, {type});
  const ActivationsView xv = x.view();
  const uint8_t* q = xv.quantized[kernels::quantized_x_layout(type)];
  REQUIRE(q != nullptr);

  const auto run = [&](WeightPath path) {
    std::vector<float> y(static_cast<size_t>(n_tokens * rows), 0.0f);
    matmul_rows(k, view, xv, n_tokens, y.data(), rows, 0, rows, path);
    return y;
  };
  std::vector<float> integer(static_cast<size_t>(n_tokens * rows), 0.0f);
  k.matmul_quant(kernels::MatmulArgs{view, n_tokens, integer.data(), rows, 0, rows}, q);
  std::vector<float> fastest(integer.size(), 0.0f);
  kernels::matmul_quantized(k, kernels::MatmulArgs{view, n_tokens, fastest.data(), rows, 0, rows},
                            kernels::QuantizedInput{q, xv.bf16});

  const std::vector<float> exact = run(WeightPath::kExactWeights);
  CHECK(std::memcmp(exact.data(), integer.data(), exact.size() * sizeof(float)) == 0);
  const std::vector<float> fast = run(WeightPath::kFastest);
  CHECK(std::memcmp(fast.data(), fastest.data(), fast.size() * sizeof(float)) == 0);
  if (k.level >= kernels::CpuLevel::kAvx512Bf16) {
    // Here the two paths really differ (W rounded to bf16 on one of them).
    CHECK(std::memcmp(fast.data(), exact.data(), fast.size() * sizeof(float)) != 0);
  }
}

}  // namespace
}  // namespace dancemoe
