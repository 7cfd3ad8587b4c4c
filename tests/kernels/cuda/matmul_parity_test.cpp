// CUDA parity of the dense projections (GEMV and tensor-core GEMM) against
// the scalar CPU matmuls: up to three weight matrices sharing one input,
// bias and accumulate epilogues, strided inputs and outputs (columns of y
// outside the written rows must stay untouched), token counts around the
// 4-token GEMV pass and the 64-row tile, sizes that are not multiples of 8
// (scalar GEMV path) and f32 activations (the router).
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/cuda/matmul.cuh"
#include "kernels/kernels.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace dancemoe::testing {
namespace {

namespace kc = kernels::cuda;

enum class Path { kGemv, kGemm, kGemvF32 };

double run_case(int64_t n_tokens, int64_t cols, Path path, std::mt19937& rng) {
  const kernels::CpuKernels& ref = *kernels::cpu_kernels_for(kernels::CpuLevel::kScalar);
  const int64_t rows[3] = {cols % 8 == 0 ? 64 : 7, 65, 100};
  const int64_t x_stride = cols % 8 == 0 ? cols + 8 : cols + 1;
  const std::vector<float> x = random_floats(rng, n_tokens * x_stride);
  const std::vector<uint16_t> x_bf16 = to_bf16(x);
  DeviceArray<float> d_x(x);
  DeviceArray<uint16_t> d_xb(x_bf16);

  kc::MatmulArgs args;
  args.x_stride = x_stride;
  args.n_tokens = n_tokens;
  args.cols = cols;
  args.n_problems = 3;
  if (path == Path::kGemvF32) {
    args.x_f32 = d_x.get();
  } else {
    args.x_bf16 = d_xb.get();
  }
  std::vector<DeviceArray<uint16_t>> d_w;
  std::vector<DeviceArray<float>> d_bias, d_y;
  std::vector<std::vector<float>> want(3);
  for (int i = 0; i < 3; ++i) {
    const int64_t y_stride = rows[i] + 5;
    const std::vector<uint16_t> w = to_bf16(random_floats(rng, rows[i] * cols));
    const std::vector<float> bias = random_floats(rng, rows[i]);
    const std::vector<float> y0 = random_floats(rng, n_tokens * y_stride);
    const bool use_bias = i == 1;
    const bool accumulate = i == 2;
    // Reference: y = x W^T (+ bias), or y += x W^T.
    std::vector<float> y = y0;
    std::vector<float> prod(n_tokens * y_stride, 0.0f);
    kernels::MatmulArgs m{
        {w.data(), kernels::WeightType::kBF16, rows[i], cols}, 1, nullptr, y_stride, 0, rows[i]};
    for (int64_t t = 0; t < n_tokens; ++t) {
      m.y = prod.data() + t * y_stride;
      if (path == Path::kGemvF32) {
        // matmul_f32 reads x rows at w.cols; one token at a time handles the stride.
        ref.matmul_f32(m, x.data() + t * x_stride);
      } else {
        ref.matmul_bf16(m, x_bf16.data() + t * x_stride);
      }
    }
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t r = 0; r < rows[i]; ++r) {
        float v = prod[t * y_stride + r];
        if (use_bias) v += bias[r];
        float& out = y[t * y_stride + r];
        out = accumulate ? out + v : v;
      }
    }
    want[i] = y;
    d_w.emplace_back(w);
    d_bias.emplace_back(bias);
    d_y.emplace_back(y0);
    kc::MatmulProblem& p = args.problems[i];
    p.w = d_w.back().get();
    p.rows = rows[i];
    p.bias = use_bias ? d_bias.back().get() : nullptr;
    p.y = d_y.back().get();
    p.y_stride = y_stride;
    p.accumulate = accumulate;
  }
  if (path == Path::kGemm) {
    REQUIRE(kc::gemm_supported(args));
    kc::gemm(args, nullptr);
  } else {
    kc::gemv(args, nullptr);
  }
  sync_and_check();
  double err = 0.0;
  for (int i = 0; i < 3; ++i) err = std::fmax(err, normalised_error(d_y[i].download(), want[i]));
  return err;
}

TEST_CASE("cuda parity: gemv and tensor-core gemm against the CPU matmuls") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(31);
  double worst[3] = {0, 0, 0};
  const char* names[3] = {"gemv bf16", "gemm bf16", "gemv f32"};
  for (int64_t n_tokens : {1, 3, 4, 5, 8, 9, 17, 64, 65, 130}) {
    for (int64_t cols : {8, 24, 33, 64, 200, 1024, 2056}) {
      for (Path path : {Path::kGemv, Path::kGemm, Path::kGemvF32}) {
        if (path == Path::kGemm && cols % 8 != 0) continue;
        const double err = run_case(n_tokens, cols, path, rng);
        const int idx = static_cast<int>(path);
        CHECK_MESSAGE(err < 1e-5, names[idx] << " tokens " << n_tokens << " cols " << cols
                                             << ": error " << err);
        worst[idx] = std::fmax(worst[idx], err);
      }
    }
  }
  MESSAGE("parity matmul: gemv bf16 " << worst[0] << ", gemm bf16 " << worst[1] << ", gemv f32 "
                                      << worst[2]);
}

}  // namespace
}  // namespace dancemoe::testing
