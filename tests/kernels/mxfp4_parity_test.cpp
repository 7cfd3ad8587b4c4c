// MXFP4 (kernels/cpu/mxfp4_block.h), the format of gpt-oss's experts:
// - sizes and names as GGUF has them (type 39, 17 bytes per 32 values);
// - dequantize_values against an independent reading of the OCP definition
//   (E2M1 sign / exponent / mantissa bits, an E8M0 power of two), bit-exact;
// - quantize -> dequantize within the format's error, exact on values the
//   format holds, ties to even, zero blocks;
// - matmul_quant of every level against the scalar reference at odd sizes,
//   and the reference against the exact f32 product; matmul_f32, dequantize
//   and matmul_quantized's GEMM path at every level;
// - the clamped SwiGLU of gpt-oss's experts at every level, around the limit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/numeric.h"
#include "kernels/kernels.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"
#include "tests/support/cpu_levels.h"

namespace dancemoe::kernels {
namespace {

constexpr WeightType kType = WeightType::kMXFP4;

const CpuKernels& reference() { return *cpu_kernels_for(CpuLevel::kScalar); }

std::vector<float> random_floats(std::mt19937& rng, int64_t n, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

double normalised_error(const std::vector<float>& got, const std::vector<float>& want) {
  double max_diff = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_diff = std::fmax(max_diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    max_ref = std::fmax(max_ref, std::fabs(static_cast<double>(want[i])));
  }
  return max_diff / (max_ref > 0.0 ? max_ref : 1.0);
}

// Value i of a block from the OCP MX definition, written without the
// kernels' table: E2M1 is 1 sign, 2 exponent (bias 1), 1 mantissa bit (a
// zero exponent is subnormal: 0.5 x mantissa); the block's E8M0 byte is
// the power of two 2^(e - 127). ggml's byte order: value i < 16 in the low
// nibble of byte i, value i >= 16 in the high nibble of byte i - 16.
float value_from_spec(const uint8_t* blk, int i) {
  const uint8_t byte = blk[1 + (i % 16)];
  const int code = i < 16 ? (byte & 15) : (byte >> 4);
  const int sign = code >> 3, exponent = (code >> 1) & 3, mantissa = code & 1;
  const double magnitude =
      exponent == 0 ? 0.5 * mantissa : std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
  return static_cast<float>((sign ? -magnitude : magnitude) * std::ldexp(1.0, blk[0] - 127));
}

std::vector<uint8_t> random_blocks(std::mt19937& rng, int64_t n_blocks) {
  std::vector<uint8_t> data(static_cast<size_t>(n_blocks * 17));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : data) b = static_cast<uint8_t>(byte(rng));
  return data;
}

struct Shape {
  int64_t rows, n_tokens, row_begin, row_end;
};
const Shape kShapes[] = {{1, 1, 0, 1}, {5, 2, 1, 4},   {17, 3, 2, 17},
                         {9, 4, 0, 9}, {33, 5, 3, 30}, {20, 13, 1, 19}};
const int64_t kCols[] = {32, 96, 544, 2880};  // 1, 3, 17 and gpt-oss's 90 blocks

TEST_CASE("mxfp4: sizes and names follow GGUF") {
  CHECK(is_block_format(kType));
  CHECK(weight_block_values(kType) == 32);
  CHECK(weight_block_bytes(kType) == 17);
  CHECK(weight_row_bytes(kType, 2880) == 90 * 17);
  CHECK(weight_type_name(kType) == "mxfp4");
  WeightType parsed;
  REQUIRE(parse_weight_type("MXFP4", &parsed));
  CHECK(parsed == kType);
  CHECK(quantized_x_group(kType) == 32);
  // 8-bit activations in groups of 32, as Q4_0 (Q8_0 has 16-bit ones).
  CHECK(quantized_x_layout(kType) == quantized_x_layout(WeightType::kQ4_0));
}

TEST_CASE("mxfp4: dequantization matches the OCP definition on every code and exponent") {
  // Every exponent byte (0 and 1 give f32 subnormal scales, 255 the largest
  // power) with random codes.
  std::mt19937 rng(39);
  const int64_t n_blocks = 256;
  std::vector<uint8_t> data = random_blocks(rng, n_blocks);
  for (int64_t b = 0; b < n_blocks; ++b)
    data[static_cast<size_t>(b * 17)] = static_cast<uint8_t>(b);
  std::vector<float> got(static_cast<size_t>(n_blocks * 32));
  dequantize_values(kType, data.data(), n_blocks * 32, got.data());
  int mismatches = 0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int i = 0; i < 32; ++i) {
      const float want = value_from_spec(data.data() + b * 17, i);
      const float have = got[static_cast<size_t>(b * 32 + i)];
      // -0 codes dequantize to +0 or -0: compare values, not bits, for zeros.
      if (want == 0.0f ? have != 0.0f : std::memcmp(&want, &have, 4) != 0) ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("mxfp4: quantize then dequantize stays within the format's error") {
  std::mt19937 rng(77);
  const int64_t rows = 3, cols = 1024;
  const std::vector<float> x = random_floats(rng, rows * cols, 0.02f);
  std::vector<uint8_t> q(static_cast<size_t>(rows * weight_row_bytes(kType, cols)));
  quantize_rows(kType, x.data(), rows, cols, q.data());
  std::vector<float> back(x.size());
  dequantize_values(kType, q.data(), rows * cols, back.data());
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (back[i] - x[i]) * (back[i] - x[i]);
    ref += x[i] * x[i];
  }
  const double rel = std::sqrt(err / ref);
  MESSAGE("mxfp4 relative RMS error ", rel);
  CHECK(rel < 0.16);  // 4.25 bits per value with a power-of-two scale
  CHECK(rel > 0.0);   // the fixture is not degenerate

  // Values the format holds come back exactly; a zero block is zero.
  const float exact[32] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                           -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f, 6.0f,
                           0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  -6.0f,
                           -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f, 1.0f};
  for (float scale : {1.0f, 0.125f, 1024.0f}) {
    std::vector<float> in(32), out(32);
    for (int i = 0; i < 32; ++i) in[static_cast<size_t>(i)] = exact[i] * scale;
    uint8_t blk[17];
    quantize_rows(kType, in.data(), 1, 32, blk);
    dequantize_values(kType, blk, 32, out.data());
    CHECK(out == in);
  }
  std::vector<float> zeros(32, 0.0f), out(32, 1.0f);
  uint8_t blk[17];
  quantize_rows(kType, zeros.data(), 1, 32, blk);
  dequantize_values(kType, blk, 32, out.data());
  CHECK(out == zeros);
  // Ties go to the even code: with 6 the largest value (scale 1), 2.5 -> 2,
  // 3.5 -> 4, 5 -> 4, 0.25 -> 0, 0.75 -> 1.
  std::vector<float> ties(32, 0.0f);
  ties[0] = 6.0f;
  ties[1] = 2.5f;
  ties[2] = 3.5f;
  ties[3] = 5.0f;
  ties[4] = 0.25f;
  ties[5] = -0.75f;
  quantize_rows(kType, ties.data(), 1, 32, blk);
  dequantize_values(kType, blk, 32, out.data());
  CHECK(out[0] == 6.0f);
  CHECK(out[1] == 2.0f);
  CHECK(out[2] == 4.0f);
  CHECK(out[3] == 4.0f);
  CHECK(out[4] == 0.0f);
  CHECK(out[5] == -1.0f);
}

TEST_CASE("mxfp4 parity: matmul_quant at every level against the scalar reference") {
  std::mt19937 rng(11);
  for (int64_t cols : kCols) {
    for (const Shape& s : kShapes) {
      const int64_t row_bytes = weight_row_bytes(kType, cols);
      const std::vector<float> wf = random_floats(rng, s.rows * cols);
      std::vector<uint8_t> w(static_cast<size_t>(s.rows * row_bytes));
      quantize_rows(kType, wf.data(), s.rows, cols, w.data());
      const std::vector<float> x = random_floats(rng, s.n_tokens * cols);
      std::vector<uint8_t> xq(static_cast<size_t>(s.n_tokens * quantized_x_row_bytes(kType, cols)));
      reference().quantize_x(kType, x.data(), s.n_tokens, cols, xq.data());
      const int64_t y_stride = s.rows + 3;
      const float kSentinel = 1234.5f;
      auto args_for = [&](std::vector<float>& y) {
        MatmulArgs args;
        args.w = WeightView{w.data(), kType, s.rows, cols};
        args.n_tokens = s.n_tokens;
        args.y = y.data();
        args.y_stride = y_stride;
        args.row_begin = s.row_begin;
        args.row_end = s.row_end;
        return args;
      };
      auto run = [&](const CpuKernels& k) {
        std::vector<float> y(static_cast<size_t>(s.n_tokens * y_stride), kSentinel);
        k.matmul_quant(args_for(y), xq.data());
        return y;
      };
      const std::vector<float> want = run(reference());
      for (const CpuKernels* k : testing::simd_cpu_kernels()) {
        INFO(cpu_level_name(k->level), " rows ", s.rows, " cols ", cols, " tokens ", s.n_tokens);
        const std::vector<float> got = run(*k);
        bool untouched = true;
        for (int64_t t = 0; t < s.n_tokens; ++t) {
          for (int64_t r = 0; r < y_stride; ++r) {
            if (r >= s.row_begin && r < s.row_end) continue;
            untouched = untouched && got[static_cast<size_t>(t * y_stride + r)] == kSentinel;
          }
        }
        CHECK(untouched);
        CHECK(normalised_error(got, want) <= 1e-5);
      }
      // The reference against the exact product of the dequantized weights
      // and f32 x: the difference is activation quantization.
      std::vector<float> exact(want.size(), kSentinel);
      reference().matmul_f32(args_for(exact), x.data());
      INFO("exact vs quantized activations, cols ", cols);
      CHECK(normalised_error(want, exact) <= 0.03);
    }
  }
}

TEST_CASE("mxfp4 parity: matmul_f32, dequantize and matmul_quantized at every level") {
  std::mt19937 rng(13);
  const int64_t rows = 45, cols = 544;
  const std::vector<float> wf = random_floats(rng, rows * cols);
  std::vector<uint8_t> w(static_cast<size_t>(rows * weight_row_bytes(kType, cols)));
  quantize_rows(kType, wf.data(), rows, cols, w.data());
  std::vector<float> deq(static_cast<size_t>(rows * cols));
  dequantize_values(kType, w.data(), rows * cols, deq.data());
  for (const CpuKernels* k : testing::simd_cpu_kernels()) {
    INFO(cpu_level_name(k->level));
    std::vector<float> got(deq.size(), 99.0f);
    k->dequantize(kType, w.data(), rows * cols, got.data());
    CHECK(std::memcmp(got.data(), deq.data(), deq.size() * sizeof(float)) == 0);
  }
  const CpuKernels* levels_and_scalar[] = {
      &reference(), cpu_kernels_for(CpuLevel::kAvx2), cpu_kernels_for(CpuLevel::kAvx512),
      cpu_kernels_for(CpuLevel::kAvx512Vnni), cpu_kernels_for(CpuLevel::kAvx512Bf16)};
  for (int64_t n_tokens : {3, 21, 70}) {
    const std::vector<float> x = random_floats(rng, n_tokens * cols);
    std::vector<uint16_t> x_bf16(x.size());
    for (size_t i = 0; i < x.size(); ++i) x_bf16[i] = float_to_bf16(x[i]);
    std::vector<uint8_t> xq(static_cast<size_t>(n_tokens * quantized_x_row_bytes(kType, cols)));
    reference().quantize_x(kType, x.data(), n_tokens, cols, xq.data());
    // The exact product in double from the dequantized weights.
    const int64_t y_stride = rows + 2;
    std::vector<float> exact(static_cast<size_t>(n_tokens * y_stride), 0.0f);
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t r = 2; r < rows; ++r) {
        double dot = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
          dot += static_cast<double>(deq[static_cast<size_t>(r * cols + c)]) *
                 x[static_cast<size_t>(t * cols + c)];
        }
        exact[static_cast<size_t>(t * y_stride + r)] = static_cast<float>(dot);
      }
    }
    for (const CpuKernels* k : levels_and_scalar) {
      if (k == nullptr) continue;
      INFO(cpu_level_name(k->level), " tokens ", n_tokens);
      std::vector<float> y(exact.size(), 0.0f);
      MatmulArgs args{
          WeightView{w.data(), kType, rows, cols}, n_tokens, y.data(), y_stride, 2, rows};
      k->matmul_f32(args, x.data());
      CHECK(normalised_error(y, exact) <= 2e-5);
      for (bool bf16 : {false, true}) {
        std::vector<float> yq(exact.size(), 0.0f);
        args.y = yq.data();
        matmul_quantized(*k, args, QuantizedInput{xq.data(), bf16 ? x_bf16.data() : nullptr});
        CHECK(normalised_error(yq, exact) <= 0.03);
      }
    }
  }
}

TEST_CASE("kernel parity: clamped SwiGLU at every level, around the limit") {
  std::mt19937 rng(7);
  const float alpha = 1.702f, limit = 7.0f;
  for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 2880}) {
    std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
    std::vector<float> gate(static_cast<size_t>(n)), up(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      gate[static_cast<size_t>(i)] = wide(rng);
      up[static_cast<size_t>(i)] = wide(rng);
    }
    gate[0] = limit + 3.0f;  // clamped from above
    up[0] = -limit - 3.0f;   // clamped from below
    std::vector<float> want(static_cast<size_t>(n));
    reference().swiglu_clamped(gate.data(), up.data(), n, alpha, limit, want.data());
    // The reference is the formula.
    for (int64_t i = 0; i < n; ++i) {
      const double g = std::fmin(gate[static_cast<size_t>(i)], limit);
      const double u = std::fmax(std::fmin(up[static_cast<size_t>(i)], limit), -limit);
      const double v = (u + 1.0) * g / (1.0 + std::exp(-alpha * g));
      CHECK(want[static_cast<size_t>(i)] == doctest::Approx(v).epsilon(1e-5));
    }
    CHECK(want[0] == doctest::Approx((1.0 - limit) * limit / (1.0 + std::exp(-alpha * limit))));
    for (const CpuKernels* k : testing::simd_cpu_kernels()) {
      INFO(cpu_level_name(k->level), " n ", n);
      std::vector<float> got(static_cast<size_t>(n), 99.0f);
      k->swiglu_clamped(gate.data(), up.data(), n, alpha, limit, got.data());
      double max_rel = 0.0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double ref = want[i];
        if (ref == 0.0) continue;
        max_rel = std::fmax(max_rel, std::fabs((got[i] - ref) / ref));
      }
      CHECK(max_rel <= 2e-6);
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels
