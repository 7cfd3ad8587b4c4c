// The block formats and the quantized matmul:
// - dequantize_values against an independent reading of the format
//   definitions (value_from_spec below, written from docs/quantization.md,
//   one value at a time) on random blocks of every layout;
// - quantize -> dequantize round trips within each format's error;
// - quantize_x bit-identical at every SIMD level;
// - matmul_quant of every level against the scalar reference at odd sizes,
//   row ranges not starting at 0 and a y wider than the rows written;
// - matmul_quant against the exact f32 product (the error activation
//   quantization adds), and matmul_f32 on block formats at every level.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/numeric.h"
#include "kernels/kernels.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"
#include "tests/support/cpu_levels.h"

namespace dancemoe::kernels {
namespace {

const WeightType kBlockTypes[] = {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_K,
                                  WeightType::kQ5_K, WeightType::kQ6_K};

const CpuKernels& reference() { return *cpu_kernels_for(CpuLevel::kScalar); }

std::string name_of(WeightType type) { return std::string(weight_type_name(type)); }

uint16_t read_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// Value i (0 <= i < block values) of one block, read bit by bit from the
// format definition. Written independently of kernels/cpu (no shared code
// but the f16 conversion).
float value_from_spec(WeightType type, const uint8_t* blk, int i) {
  switch (type) {
    case WeightType::kQ8_0:  // d f16 | qs[32] int8
      return static_cast<float>(static_cast<int8_t>(blk[2 + i])) * f16_to_float(read_u16(blk));
    case WeightType::kQ4_0: {  // d f16 | qs[16]: value i < 16 low nibble of qs[i], else high of
                               // qs[i-16]
      const uint8_t byte = blk[2 + (i % 16)];
      const int q = i < 16 ? (byte & 15) : (byte >> 4);
      return static_cast<float>(q - 8) * f16_to_float(read_u16(blk));
    }
    case WeightType::kQ4_K:
    case WeightType::kQ5_K: {
      // d f16 | dmin f16 | scales[12] | (Q5_K: qh[32]) | qs[128]
      const float d = f16_to_float(read_u16(blk));
      const float dmin = f16_to_float(read_u16(blk + 2));
      const uint8_t* s = blk + 4;
      const int j = i / 32;  // sub-block
      int sc, m;
      if (j < 4) {
        sc = s[j] % 64;
        m = s[4 + j] % 64;
      } else {
        sc = (s[8 + j - 4] % 16) + 16 * (s[j - 4] / 64);
        m = (s[8 + j - 4] / 16) + 16 * (s[j] / 64);
      }
      const bool q5 = type == WeightType::kQ5_K;
      const uint8_t* qs = blk + (q5 ? 48 : 16);
      const int chunk = i / 64;
      const int k = i % 32;
      const uint8_t byte = qs[32 * chunk + k];
      int q = (i % 64) < 32 ? (byte % 16) : (byte / 16);
      if (q5) q += 16 * ((blk[16 + k] >> j) & 1);
      return d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
    }
    case WeightType::kQ6_K: {
      // ql[128] | qh[64] | scales[16] int8 | d f16
      const int half = i / 128;
      const int p = i % 128;
      const int l = p % 32;
      const int s = p / 32;
      const uint8_t lbyte = blk[64 * half + l + (s % 2 == 1 ? 32 : 0)];
      const int low = s < 2 ? (lbyte % 16) : (lbyte / 16);
      const int high = (blk[128 + 32 * half + l] >> (2 * s)) % 4;
      const int q = low + 16 * high - 32;
      const int8_t sc = static_cast<int8_t>(blk[192 + i / 16]);
      return f16_to_float(read_u16(blk + 208)) * static_cast<float>(sc) * static_cast<float>(q);
    }
    default:
      return 0.0f;
  }
}

// Random finite f16 of magnitude 2^-14 .. 2^1 for scale fields.
uint16_t random_scale_f16(std::mt19937& rng) {
  std::uniform_int_distribution<int> exponent(1, 16);
  std::uniform_int_distribution<int> mantissa(0, 0x3ff);
  std::uniform_int_distribution<int> sign(0, 1);
  return static_cast<uint16_t>(sign(rng) << 15 | exponent(rng) << 10 | mantissa(rng));
}

// Random bytes for n_blocks blocks, with finite f16 scales where the format has them.
std::vector<uint8_t> random_blocks(std::mt19937& rng, WeightType type, int64_t n_blocks) {
  const int64_t bytes = weight_block_bytes(type);
  std::vector<uint8_t> data(static_cast<size_t>(n_blocks * bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : data) b = static_cast<uint8_t>(byte(rng));
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* blk = data.data() + b * bytes;
    auto put = [&](int64_t at) {
      const uint16_t h = random_scale_f16(rng);
      std::memcpy(blk + at, &h, 2);
    };
    if (type == WeightType::kQ6_K) {
      put(208);
    } else {
      put(0);
      if (type == WeightType::kQ4_K || type == WeightType::kQ5_K) put(2);
    }
  }
  return data;
}

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

// Odd column counts per grouping: 1, 3 and 5 (or 17) blocks.
std::vector<int64_t> cols_for(WeightType type) {
  const int64_t block = weight_block_values(type);
  return block == 32 ? std::vector<int64_t>{32, 96, 544} : std::vector<int64_t>{256, 768, 1280};
}

struct Shape {
  int64_t rows, n_tokens, row_begin, row_end;
};
// The last two reach Q8_0's quad path (16 tokens or more; quant_simd.h),
// with partial quads and chunks.
const Shape kShapes[] = {{1, 1, 0, 1},   {5, 2, 1, 4},    {17, 3, 2, 17},  {9, 4, 0, 9},
                         {33, 5, 3, 30}, {20, 13, 1, 19}, {37, 18, 2, 35}, {6, 21, 0, 6}};

TEST_CASE("quant formats: sizes and names follow GGUF") {
  CHECK(weight_block_bytes(WeightType::kQ8_0) == 34);
  CHECK(weight_block_bytes(WeightType::kQ4_0) == 18);
  CHECK(weight_block_bytes(WeightType::kQ4_K) == 144);
  CHECK(weight_block_bytes(WeightType::kQ5_K) == 176);
  CHECK(weight_block_bytes(WeightType::kQ6_K) == 210);
  CHECK(weight_row_bytes(WeightType::kQ4_K, 1024) == 4 * 144);
  CHECK(weight_row_bytes(WeightType::kBF16, 10) == 20);
  for (int i = 0; i < kWeightTypeCount; ++i) {
    const auto type = static_cast<WeightType>(i);
    WeightType parsed;
    REQUIRE(parse_weight_type(weight_type_name(type), &parsed));
    CHECK(parsed == type);
  }
  WeightType parsed;
  CHECK(parse_weight_type("Q4_K", &parsed));
  CHECK(parsed == WeightType::kQ4_K);
  CHECK_FALSE(parse_weight_type("q3_K", &parsed));
}

TEST_CASE("quant formats: dequantization matches the format definition on random blocks") {
  std::mt19937 rng(2024);
  for (WeightType type : kBlockTypes) {
    INFO(name_of(type));
    const int64_t n_blocks = 7;
    const int64_t block = weight_block_values(type);
    const std::vector<uint8_t> data = random_blocks(rng, type, n_blocks);
    std::vector<float> got(static_cast<size_t>(n_blocks * block));
    dequantize_values(type, data.data(), n_blocks * block, got.data());
    int mismatches = 0;
    for (int64_t b = 0; b < n_blocks; ++b) {
      for (int64_t i = 0; i < block; ++i) {
        const float want =
            value_from_spec(type, data.data() + b * weight_block_bytes(type), static_cast<int>(i));
        // Bit-identical, not just close: the same products in the same order.
        if (std::memcmp(&want, &got[static_cast<size_t>(b * block + i)], 4) != 0) ++mismatches;
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("quant formats: quantize then dequantize stays within each format's error") {
  std::mt19937 rng(77);
  // Relative RMS error bounds, a little above what each format achieves on
  // Gaussian data (8, 4.5, 4.5, 5.5 and 6.5 bits per value).
  const std::pair<WeightType, double> bounds[] = {{WeightType::kQ8_0, 0.006},
                                                  {WeightType::kQ4_0, 0.13},
                                                  {WeightType::kQ4_K, 0.10},
                                                  {WeightType::kQ5_K, 0.05},
                                                  {WeightType::kQ6_K, 0.025}};
  for (const auto& [type, bound] : bounds) {
    INFO(name_of(type));
    const int64_t rows = 3;
    const int64_t cols = 1024;
    const std::vector<float> x = random_floats(rng, rows * cols, 0.02f);
    std::vector<uint8_t> q(static_cast<size_t>(rows * weight_row_bytes(type, cols)));
    quantize_rows(type, x.data(), rows, cols, q.data());
    std::vector<float> back(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_values(type, q.data() + r * weight_row_bytes(type, cols), cols,
                        back.data() + r * cols);
    }
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      err += (back[i] - x[i]) * (back[i] - x[i]);
      ref += x[i] * x[i];
    }
    const double rel = std::sqrt(err / ref);
    MESSAGE(name_of(type), " relative RMS error ", rel);
    CHECK(rel < bound);
    CHECK(rel > 0.0);  // the fixture is not degenerate
  }
  // All-zero and constant blocks quantize without NaN.
  for (WeightType type : kBlockTypes) {
    for (float v : {0.0f, 0.5f, -3.0f}) {
      std::vector<float> x(256, v);
      std::vector<uint8_t> q(static_cast<size_t>(weight_row_bytes(type, 256)));
      quantize_rows(type, x.data(), 1, 256, q.data());
      std::vector<float> back(256);
      dequantize_values(type, q.data(), 256, back.data());
      for (float b : back) CHECK(std::fabs(b - v) <= 0.05f * std::fabs(v) + 1e-6f);
    }
  }
}

TEST_CASE("quant formats: float types convert exactly or by rounding to nearest even") {
  const std::vector<float> x = {1.0f, -2.5f, 3.1415926f, 65504.0f, 1e-7f, 0.0f};
  for (WeightType type : {WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
    std::vector<uint8_t> q(static_cast<size_t>(weight_row_bytes(type, 6)));
    quantize_rows(type, x.data(), 1, 6, q.data());
    std::vector<float> back(6);
    dequantize_values(type, q.data(), 6, back.data());
    CHECK(back[0] == 1.0f);
    CHECK(back[1] == -2.5f);
    if (type == WeightType::kF16) {
      CHECK(back[3] == 65504.0f);
      CHECK(back[2] == f16_to_float(0x4248));  // pi in half precision
    }
  }
}

TEST_CASE("quant parity: quantize_x is bit-identical at every level") {
  std::mt19937 rng(5);
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_K}) {
    for (int64_t cols : cols_for(type)) {
      const int64_t n_tokens = 3;
      std::vector<float> x = random_floats(rng, n_tokens * cols);
      for (int64_t i = 0; i < 32; ++i)
        x[static_cast<size_t>(cols + i)] = 0.0f;  // an all-zero group
      const int64_t row = quantized_x_row_bytes(type, cols);
      std::vector<uint8_t> want(static_cast<size_t>(n_tokens * row), 0xAB);
      reference().quantize_x(type, x.data(), n_tokens, cols, want.data());
      for (const CpuKernels* k : testing::simd_cpu_kernels()) {
        INFO(cpu_level_name(k->level), " ", name_of(type), " cols ", cols);
        std::vector<uint8_t> got(want.size(), 0xCD);
        k->quantize_x(type, x.data(), n_tokens, cols, got.data());
        CHECK(got == want);
      }
      // The levels reproduce x within half a level (plus, with 32767
      // levels, the f32 rounding of d and x / d: a few thousandths of one).
      const QuantizedXRow r = quantized_x_row(type, want.data(), cols, 0);
      const int64_t group = quantized_x_group(type);
      REQUIRE((r.q16 != nullptr) == wide_x(type));
      for (int64_t i = 0; i < cols; ++i) {
        const float level = wide_x(type) ? r.q16[i] : r.q[q_offset(type, i)];
        CHECK(std::fabs(level * r.d[i / group] - x[static_cast<size_t>(i)]) <=
              (wide_x(type) ? 0.505f : 0.5f * 1.0001f) * r.d[i / group]);
      }
    }
  }
}

TEST_CASE("quant parity: matmul_quant at every level against the scalar reference") {
  std::mt19937 rng(11);
  for (WeightType type : kBlockTypes) {
    for (int64_t cols : cols_for(type)) {
      for (const Shape& s : kShapes) {
        const int64_t row_bytes = weight_row_bytes(type, cols);
        const std::vector<float> wf = random_floats(rng, s.rows * cols);
        std::vector<uint8_t> w(static_cast<size_t>(s.rows * row_bytes));
        quantize_rows(type, wf.data(), s.rows, cols, w.data());
        const std::vector<float> x = random_floats(rng, s.n_tokens * cols);
        std::vector<uint8_t> xq(
            static_cast<size_t>(s.n_tokens * quantized_x_row_bytes(type, cols)));
        reference().quantize_x(type, x.data(), s.n_tokens, cols, xq.data());

        const int64_t y_stride = s.rows + 3;
        const float kSentinel = 1234.5f;
        auto run = [&](const CpuKernels& k) {
          std::vector<float> y(static_cast<size_t>(s.n_tokens * y_stride), kSentinel);
          MatmulArgs args;
          args.w = WeightView{w.data(), type, s.rows, cols};
          args.n_tokens = s.n_tokens;
          args.y = y.data();
          args.y_stride = y_stride;
          args.row_begin = s.row_begin;
          args.row_end = s.row_end;
          k.matmul_quant(args, xq.data());
          return y;
        };
        const std::vector<float> want = run(reference());
        for (const CpuKernels* k : testing::simd_cpu_kernels()) {
          INFO(cpu_level_name(k->level), " ", name_of(type), " rows ", s.rows, " cols ", cols,
               " tokens ", s.n_tokens, " rows [", s.row_begin, ", ", s.row_end, ")");
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

        // Against the exact product with the dequantized weights and f32 x:
        // the difference is activation quantization (about 1/254 of each
        // value's group maximum, random in sign; 1/65534 for Q8_0's 16-bit
        // activations).
        std::vector<float> exact(want.size(), kSentinel);
        MatmulArgs args;
        args.w = WeightView{w.data(), type, s.rows, cols};
        args.n_tokens = s.n_tokens;
        args.y = exact.data();
        args.y_stride = y_stride;
        args.row_begin = s.row_begin;
        args.row_end = s.row_end;
        reference().matmul_f32(args, x.data());
        INFO(name_of(type), " exact vs quantized activations, cols ", cols);
        CHECK(normalised_error(want, exact) <= (wide_x(type) ? 1e-4 : 0.03));
      }
    }
  }
}

TEST_CASE("quant parity: Q4_K / Q5_K from 16 tokens equal 4-token calls (bit for bit on AVX2)") {
  // From 16 tokens the rows are unpacked once per chunk (quant_simd.h,
  // matmul_k_unpacked; with VNNI, 8 rows at a time, matmul_k_grouped); under
  // 16 each 4-token block unpacks them again. On AVX2 that is the same
  // arithmetic in the same order: the same bits. The AVX-512 levels compute
  // 4-token blocks with their 512-bit kernels, and the grouped kernel
  // converts once per super-block, so their f32 sums are ordered
  // differently: the same up to rounding.
  std::mt19937 rng(23);
  for (WeightType type : {WeightType::kQ4_K, WeightType::kQ5_K}) {
    const int64_t rows = 37, cols = 768, n_tokens = 18;
    const std::vector<float> wf = random_floats(rng, rows * cols);
    std::vector<uint8_t> w(static_cast<size_t>(rows * weight_row_bytes(type, cols)));
    quantize_rows(type, wf.data(), rows, cols, w.data());
    const std::vector<float> x = random_floats(rng, n_tokens * cols);
    const int64_t x_row = quantized_x_row_bytes(type, cols);
    std::vector<uint8_t> xq(static_cast<size_t>(n_tokens * x_row));
    reference().quantize_x(type, x.data(), n_tokens, cols, xq.data());
    for (const CpuKernels* k : testing::simd_cpu_kernels()) {
      INFO(cpu_level_name(k->level), " ", name_of(type));
      std::vector<float> whole(static_cast<size_t>(n_tokens * rows), 0.0f);
      std::vector<float> blocks(whole.size(), 1.0f);
      k->matmul_quant(
          MatmulArgs{WeightView{w.data(), type, rows, cols}, n_tokens, whole.data(), rows, 1, rows},
          xq.data());
      for (int64_t t0 = 0; t0 < n_tokens; t0 += 4) {
        const int64_t n = std::min<int64_t>(4, n_tokens - t0);
        k->matmul_quant(MatmulArgs{WeightView{w.data(), type, rows, cols}, n,
                                   blocks.data() + t0 * rows, rows, 1, rows},
                        xq.data() + t0 * x_row);
      }
      for (int64_t t = 0; t < n_tokens; ++t) blocks[static_cast<size_t>(t * rows)] = 0.0f;
      if (k->level == CpuLevel::kAvx2) {
        CHECK(std::memcmp(whole.data(), blocks.data(), whole.size() * sizeof(float)) == 0);
      } else {
        CHECK(normalised_error(whole, blocks) <= 1e-6);
      }
    }
  }
}

TEST_CASE("quant parity: matmul_f32 with block-format weights at every level") {
  std::mt19937 rng(13);
  for (WeightType type : kBlockTypes) {
    const int64_t cols = cols_for(type)[1];
    const Shape s{7, 3, 1, 6};
    const std::vector<float> wf = random_floats(rng, s.rows * cols);
    std::vector<uint8_t> w(static_cast<size_t>(s.rows * weight_row_bytes(type, cols)));
    quantize_rows(type, wf.data(), s.rows, cols, w.data());
    const std::vector<float> x = random_floats(rng, s.n_tokens * cols);
    auto run = [&](const CpuKernels& k) {
      std::vector<float> y(static_cast<size_t>(s.n_tokens * s.rows), 0.0f);
      MatmulArgs args{WeightView{w.data(), type, s.rows, cols},
                      s.n_tokens,
                      y.data(),
                      s.rows,
                      s.row_begin,
                      s.row_end};
      k.matmul_f32(args, x.data());
      return y;
    };
    const std::vector<float> want = run(reference());
    // The reference itself against dequantize + a double-precision dot.
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = s.row_begin; r < s.row_end; ++r) {
      dequantize_values(type, w.data() + r * weight_row_bytes(type, cols), cols, row.data());
      for (int64_t t = 0; t < s.n_tokens; ++t) {
        double dot = 0.0;
        for (int64_t c = 0; c < cols; ++c) dot += static_cast<double>(row[c]) * x[t * cols + c];
        CHECK(std::fabs(want[static_cast<size_t>(t * s.rows + r)] - dot) <=
              1e-4 * (1 + std::fabs(dot)));
      }
    }
    for (const CpuKernels* k : testing::simd_cpu_kernels()) {
      INFO(cpu_level_name(k->level), " ", name_of(type));
      CHECK(normalised_error(run(*k), want) <= 2e-5);
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels

namespace dancemoe::kernels {
namespace {

TEST_CASE("quant parity: dequantize is bit-identical to the reference at every level") {
  std::mt19937 rng(17);
  for (WeightType type : kBlockTypes) {
    const int64_t n = 3 * 256;
    const std::vector<uint8_t> data = random_blocks(rng, type, n / weight_block_values(type));
    std::vector<float> want(static_cast<size_t>(n));
    dequantize_values(type, data.data(), n, want.data());
    for (const CpuKernels* k : testing::simd_cpu_kernels()) {
      INFO(cpu_level_name(k->level), " ", name_of(type));
      std::vector<float> got(static_cast<size_t>(n), 99.0f);
      k->dequantize(type, data.data(), n, got.data());
      CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("quant parity: matmul_quantized's GEMM path matches the exact product") {
  std::mt19937 rng(19);
  const CpuKernels* levels_and_scalar[] = {
      &reference(), cpu_kernels_for(CpuLevel::kAvx2), cpu_kernels_for(CpuLevel::kAvx512),
      cpu_kernels_for(CpuLevel::kAvx512Vnni), cpu_kernels_for(CpuLevel::kAvx512Bf16)};
  for (WeightType type : kBlockTypes) {
    for (int64_t n_tokens : {21, 70}) {
      const int64_t rows = 45, cols = cols_for(type)[1];
      const std::vector<float> wf = random_floats(rng, rows * cols);
      std::vector<uint8_t> w(static_cast<size_t>(rows * weight_row_bytes(type, cols)));
      quantize_rows(type, wf.data(), rows, cols, w.data());
      const std::vector<float> x = random_floats(rng, n_tokens * cols);
      std::vector<uint16_t> x_bf16(x.size());
      for (size_t i = 0; i < x.size(); ++i) x_bf16[i] = float_to_bf16(x[i]);
      std::vector<uint8_t> xq(static_cast<size_t>(n_tokens * quantized_x_row_bytes(type, cols)));
      reference().quantize_x(type, x.data(), n_tokens, cols, xq.data());
      const int64_t y_stride = rows + 2;
      std::vector<float> exact(static_cast<size_t>(n_tokens * y_stride), 0.0f);
      MatmulArgs args{
          WeightView{w.data(), type, rows, cols}, n_tokens, exact.data(), y_stride, 2, rows};
      reference().matmul_f32(args, x.data());
      for (const CpuKernels* k : levels_and_scalar) {
        if (k == nullptr) continue;
        for (bool bf16 : {false, true}) {
          INFO(cpu_level_name(k->level), " ", name_of(type), " tokens ", n_tokens,
               bf16 ? " bf16" : " f32");
          std::vector<float> y(exact.size(), 0.0f);
          MatmulArgs a = args;
          a.y = y.data();
          matmul_quantized(*k, a, QuantizedInput{xq.data(), bf16 ? x_bf16.data() : nullptr});
          // Which path ran (kernels.h) sets the error: activation quantization
          // on the integer path, bf16 rounding of W and x on the bf16 GEMM.
          const bool bf16_gemm =
              bf16 && k->level >= CpuLevel::kAvx512Bf16 && n_tokens >= quant_gemm_min_tokens(type);
          const double tolerance = bf16_gemm ? 0.02 : (wide_x(type) ? 1e-4 : 0.03);
          CHECK(normalised_error(y, exact) <= tolerance);
        }
      }
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels
