// CUDA parity of the block formats against the CPU reference: device
// dequantization equals the CPU's dequantize_values rounded to bf16, bit for
// bit; gemv_quant (f32 and bf16 activations, accumulate, odd row counts and
// token counts around the 4-token pass) and matmul_quant's dequantize + GEMM
// path match the CPU's matmul_f32 on the same weights; a type the kernels do
// not read is refused, not skipped.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/cuda/dequantize.cuh"
#include "kernels/cuda/matmul_quant.cuh"
#include "kernels/kernels.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace dancemoe::testing {
namespace {

namespace kc = kernels::cuda;
using kernels::WeightType;

const WeightType kTypes[] = {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_K,
                             WeightType::kQ5_K, WeightType::kQ6_K, WeightType::kMXFP4};

std::vector<uint8_t> quantized(WeightType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  const std::vector<float> w = random_floats(rng, rows * cols);
  std::vector<uint8_t> q(static_cast<size_t>(rows * kernels::weight_row_bytes(type, cols)));
  kernels::quantize_rows(type, w.data(), rows, cols, q.data());
  return q;
}

TEST_CASE("cuda quant: dequantization equals the CPU reference rounded to bf16") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(3);
  for (WeightType type : kTypes) {
    const int64_t rows = 5, cols = 512;
    const std::vector<uint8_t> q = quantized(type, rows, cols, rng);
    DeviceArray<uint8_t> d_q(q);
    DeviceArray<uint16_t> d_out(static_cast<size_t>(rows * cols));
    REQUIRE(kc::dequantize_bf16(type, d_q.get(), rows, cols, d_out.get(), cols, nullptr));
    sync_and_check();
    const std::vector<uint16_t> got = d_out.download();
    std::vector<float> want(static_cast<size_t>(cols));
    int mismatches = 0;
    for (int64_t r = 0; r < rows; ++r) {
      kernels::dequantize_values(type, q.data() + r * kernels::weight_row_bytes(type, cols), cols,
                                 want.data());
      for (int64_t c = 0; c < cols; ++c) {
        mismatches += got[static_cast<size_t>(r * cols + c)] !=
                      kernels::float_to_bf16(want[static_cast<size_t>(c)]);
      }
    }
    INFO(kernels::weight_type_name(type));
    CHECK(mismatches == 0);
  }
}

TEST_CASE("cuda quant: gemv_quant and matmul_quant match the CPU's matmul_f32") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(5);
  const kernels::CpuKernels& ref = *kernels::cpu_kernels_for(kernels::CpuLevel::kScalar);
  for (WeightType type : kTypes) {
    for (int64_t n_tokens : {1, 3, 5, 33}) {
      for (bool f32 : {true, false}) {
        if (n_tokens > 8 && f32) continue;  // the GEMM path takes bf16 activations
        const int64_t rows = 67, cols = 768;
        const std::vector<uint8_t> q = quantized(type, rows, cols, rng);
        std::vector<float> x = random_floats(rng, n_tokens * cols);
        const std::vector<uint16_t> x_bf16 = to_bf16(x);
        if (!f32) {
          for (size_t i = 0; i < x.size(); ++i) x[i] = kernels::bf16_to_float(x_bf16[i]);
        }
        std::vector<float> want(static_cast<size_t>(n_tokens * rows));
        kernels::MatmulArgs m{{q.data(), type, rows, cols}, n_tokens, want.data(), rows, 0, rows};
        ref.matmul_f32(m, x.data());

        DeviceArray<uint8_t> d_q(q);
        DeviceArray<float> d_x(x);
        DeviceArray<uint16_t> d_xb(x_bf16);
        DeviceArray<float> d_y(static_cast<size_t>(n_tokens * rows));
        DeviceArray<uint16_t> scratch(static_cast<size_t>(rows * cols));
        kc::QuantMatmulArgs a;
        a.w = d_q.get();
        a.type = type;
        a.rows = rows;
        a.cols = cols;
        a.x_f32 = f32 ? d_x.get() : nullptr;
        a.x_bf16 = f32 ? nullptr : d_xb.get();
        a.x_stride = cols;
        a.n_tokens = n_tokens;
        a.y = d_y.get();
        a.y_stride = rows;
        REQUIRE(kc::matmul_quant(a, scratch.get(), nullptr));
        sync_and_check();
        INFO(kernels::weight_type_name(type), " tokens ", n_tokens, f32 ? " f32" : " bf16");
        // The GEMM path rounds the weights to bf16: a looser bound.
        const double tolerance = n_tokens > 8 ? 1e-2 : 1e-5;
        CHECK(normalised_error(d_y.download(), want) <= tolerance);
      }
    }
  }
}

// Needs no device: a refused type launches nothing.
TEST_CASE("cuda quant: a type the kernels do not read is refused, not silently skipped") {
  kc::QuantMatmulArgs a;
  a.type = WeightType::kF16;
  a.rows = 4;
  a.cols = 32;
  a.n_tokens = 1;
  CHECK_FALSE(kc::gemv_quant(a, nullptr));
  CHECK_FALSE(kc::matmul_quant(a, nullptr, nullptr));
  a.n_tokens = 0;  // even with nothing to compute
  CHECK_FALSE(kc::gemv_quant(a, nullptr));
  for (WeightType type : {WeightType::kF32, WeightType::kBF16, WeightType::kF16}) {
    CHECK_FALSE(kc::dequantize_bf16(type, nullptr, 4, 32, nullptr, 32, nullptr));
  }
}

}  // namespace
}  // namespace dancemoe::testing
