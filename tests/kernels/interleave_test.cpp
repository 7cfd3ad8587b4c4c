// Q4_K, Q5_K, Q6_K, Q8_0 and BF16 interleaved by 16 rows (kernels/interleave.h):
// - interleave / deinterleave round trips are exact on any bytes;
// - matmul_quant on the interleaved copy equals the rows layout's at every
//   level (the VNNI kernel, and the deinterleaving path of the others) at
//   token counts on both sides of every kernel's token block, row ranges not
//   starting at 0 and a y wider than the rows written;
// - matmul_f32 on it is bit-identical to the rows layout;
// - matmul_bf16 on an interleaved BF16 matrix equals the rows layout's at
//   every level, and with the AVX-512 BF16 kernel a token's result does not
//   depend on the tokens computed with it;
// - sizes and the shapes that can be interleaved.
#include "kernels/interleave.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"
#include "tests/support/cpu_levels.h"

namespace dancemoe::kernels {
namespace {

std::vector<float> random_floats(std::mt19937& rng, int64_t n) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

const WeightType kTypes[] = {WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K,
                             WeightType::kQ8_0};
const WeightType kAllTypes[] = {WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K,
                                WeightType::kQ8_0, WeightType::kBF16};

std::vector<uint8_t> random_matrix(std::mt19937& rng, WeightType type, int64_t rows, int64_t cols) {
  const std::vector<float> wf = random_floats(rng, rows * cols);
  std::vector<uint8_t> w(static_cast<size_t>(rows * weight_row_bytes(type, cols)));
  quantize_rows(type, wf.data(), rows, cols, w.data());
  return w;
}

std::vector<uint8_t> interleaved(WeightType type, const std::vector<uint8_t>& rows_layout,
                                 int64_t rows, int64_t cols) {
  std::vector<uint8_t> out(rows_layout.size());
  interleave_matrix(type, rows_layout.data(), rows, cols, out.data());
  return out;
}

double normalised_error(const std::vector<float>& got, const std::vector<float>& want) {
  double max_diff = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - want[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(want[i])));
  }
  return max_ref == 0.0 ? max_diff : max_diff / max_ref;
}

// Every element of y (n_tokens rows of y_stride) outside the columns
// [row_begin, row_end) still holds `sentinel`.
bool untouched_outside(const std::vector<float>& y, int64_t n_tokens, int64_t y_stride,
                       int64_t row_begin, int64_t row_end, float sentinel) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < y_stride; ++r) {
      if (r >= row_begin && r < row_end) continue;
      if (y[static_cast<size_t>(t * y_stride + r)] != sentinel) return false;
    }
  }
  return true;
}

TEST_CASE("interleave: round trips are exact, on quantized rows and on any bytes") {
  std::mt19937 rng(3);
  for (WeightType type : kAllTypes) {
    for (int64_t cols : {256, 768}) {
      INFO(weight_type_name(type), " cols ", cols);
      const int64_t rows = 48;
      std::vector<uint8_t> w = random_matrix(rng, type, rows, cols);
      std::vector<uint8_t> back(w.size());
      const std::vector<uint8_t> il0 = interleaved(type, w, rows, cols);
      CHECK(il0 != w);
      deinterleave_rows(type, il0.data(), cols, 0, rows, back.data());
      CHECK(back == w);
      // Every bit of a block is data (Q4_K's 12 scale bytes pack 16 six-bit
      // values exactly), so arbitrary bytes survive too.
      for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
      deinterleave_rows(type, interleaved(type, w, rows, cols).data(), cols, 0, rows, back.data());
      CHECK(back == w);
      // A range of rows alone.
      const std::vector<uint8_t> il = interleaved(type, w, rows, cols);
      const int64_t row_bytes = weight_row_bytes(type, cols);
      std::vector<uint8_t> part(static_cast<size_t>(16 * row_bytes));
      deinterleave_rows(type, il.data(), cols, 16, 16, part.data());
      CHECK(std::equal(part.begin(), part.end(), w.begin() + 16 * row_bytes));
      std::vector<uint8_t> copied(w.size());
      copy_as_rows(WeightView{il.data(), type, rows, cols, WeightLayout::kInterleaved16},
                   copied.data());
      CHECK(copied == w);
    }
  }
}

TEST_CASE("interleave: the shapes that can be interleaved, and their sizes") {
  CHECK(can_interleave(WeightType::kQ4_K, 512, 1024));
  CHECK(can_interleave(WeightType::kQ6_K, 32000, 1024));
  CHECK_FALSE(can_interleave(WeightType::kQ4_K, 40, 1024));  // rows not whole groups
  CHECK_FALSE(can_interleave(WeightType::kQ4_K, 512, 1000));
  CHECK(can_interleave(WeightType::kQ8_0, 512, 1056));  // Q8_0: whole 32-value blocks
  CHECK_FALSE(can_interleave(WeightType::kQ4_0, 512, 1024));
  CHECK(can_interleave(WeightType::kQ5_K, 512, 1024));
  CHECK_FALSE(can_interleave(WeightType::kQ4_K, 0, 1024));
  CHECK(can_interleave(WeightType::kBF16, 256, 258));  // BF16: pairs of columns
  CHECK_FALSE(can_interleave(WeightType::kBF16, 256, 257));
  CHECK_FALSE(can_interleave(WeightType::kBF16, 24, 256));
  CHECK_FALSE(can_interleave(WeightType::kF32, 256, 256));
  CHECK(kQ4KGroupBytes == 16 * weight_block_bytes(WeightType::kQ4_K));
  CHECK(kQ6KGroupBytes == 16 * weight_block_bytes(WeightType::kQ6_K));
  CHECK(kQ5KGroupBytes == 16 * weight_block_bytes(WeightType::kQ5_K));
  CHECK(kQ8GroupBytes == 16 * weight_block_bytes(WeightType::kQ8_0));
  CHECK(weight_view_bytes(WeightView{nullptr, WeightType::kQ4_K, 32, 512,
                                     WeightLayout::kInterleaved16}) == 32 * 2 * 144);
}

TEST_CASE("interleave: matmul_quant equals the rows layout at every level") {
  std::mt19937 rng(5);
  struct Shape {
    int64_t rows, cols, row_begin, row_end;
  };
  // 288 columns: Q8_0 only, whose activation groups of 256 end short.
  const Shape shapes[] = {
      {64, 1024, 16, 64}, {32, 256, 0, 32}, {48, 512, 16, 32}, {32, 288, 0, 32}};
  for (WeightType type : kTypes) {
    for (const Shape& s : shapes) {
      if (!can_interleave(type, s.rows, s.cols)) continue;
      const std::vector<uint8_t> w = random_matrix(rng, type, s.rows, s.cols);
      const std::vector<uint8_t> il = interleaved(type, w, s.rows, s.cols);
      for (int64_t n_tokens : {1, 2, 3, 4, 5, 7, 16, 33}) {
        const std::vector<float> x = random_floats(rng, n_tokens * s.cols);
        std::vector<uint8_t> xq(
            static_cast<size_t>(n_tokens * quantized_x_row_bytes(type, s.cols)));
        cpu_kernels_for(CpuLevel::kScalar)->quantize_x(type, x.data(), n_tokens, s.cols, xq.data());
        const int64_t y_stride = s.rows + 5;
        const float kSentinel = 1234.5f;
        auto run = [&](const CpuKernels& k, const void* data, WeightLayout layout) {
          std::vector<float> y(static_cast<size_t>(n_tokens * y_stride), kSentinel);
          MatmulArgs args{WeightView{data, type, s.rows, s.cols, layout},
                          n_tokens,
                          y.data(),
                          y_stride,
                          s.row_begin,
                          s.row_end};
          k.matmul_quant(args, xq.data());
          return y;
        };
        const std::vector<float> want =
            run(*cpu_kernels_for(CpuLevel::kScalar), w.data(), WeightLayout::kRows);
        for (const CpuKernels* k : testing::all_cpu_kernels()) {
          INFO(cpu_level_name(k->level), " ", weight_type_name(type), " rows ", s.rows, " cols ",
               s.cols, " tokens ", n_tokens, " rows [", s.row_begin, ", ", s.row_end, ")");
          const std::vector<float> got = run(*k, il.data(), WeightLayout::kInterleaved16);
          CHECK(untouched_outside(got, n_tokens, y_stride, s.row_begin, s.row_end, kSentinel));
          CHECK(normalised_error(got, want) <= 1e-5);
          // Not the same numbers by accident of a zero result.
          CHECK(normalised_error(got, std::vector<float>(got.size(), 0.0f)) > 0.0);
        }
      }
    }
  }
}

TEST_CASE("interleave: matmul_f32 is bit-identical to the rows layout") {
  std::mt19937 rng(7);
  const int64_t rows = 32, cols = 512, n_tokens = 3;
  for (WeightType type : kAllTypes) {
    const std::vector<uint8_t> w = random_matrix(rng, type, rows, cols);
    const std::vector<uint8_t> il = interleaved(type, w, rows, cols);
    const std::vector<float> x = random_floats(rng, n_tokens * cols);
    for (const CpuKernels* k : testing::all_cpu_kernels()) {
      INFO(cpu_level_name(k->level), " ", weight_type_name(type));
      std::vector<float> want(static_cast<size_t>(n_tokens * rows)), got(want.size());
      k->matmul_f32(
          MatmulArgs{WeightView{w.data(), type, rows, cols}, n_tokens, want.data(), rows, 0, rows},
          x.data());
      k->matmul_f32(
          MatmulArgs{WeightView{il.data(), type, rows, cols, WeightLayout::kInterleaved16},
                     n_tokens, got.data(), rows, 16, rows},
          x.data());
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t r = 16; r < rows; ++r) {
          CHECK(got[static_cast<size_t>(t * rows + r)] == want[static_cast<size_t>(t * rows + r)]);
        }
      }
    }
  }
}

std::vector<uint16_t> as_bf16(const std::vector<float>& x) {
  std::vector<uint16_t> out(x.size());
  cpu_kernels_for(CpuLevel::kScalar)
      ->f32_to_bf16(x.data(), static_cast<int64_t>(x.size()), out.data());
  return out;
}

TEST_CASE("interleave: matmul_bf16 equals the rows layout at every level") {
  std::mt19937 rng(11);
  struct Shape {
    int64_t rows, cols, row_begin, row_end;
  };
  // 258 columns: an odd number of pairs (the kernel's last, single pair).
  const Shape shapes[] = {{64, 1024, 16, 64}, {32, 256, 0, 32}, {48, 258, 16, 32}};
  for (const Shape& s : shapes) {
    const std::vector<uint8_t> w = random_matrix(rng, WeightType::kBF16, s.rows, s.cols);
    const std::vector<uint8_t> il = interleaved(WeightType::kBF16, w, s.rows, s.cols);
    // 70: two passes of the kernel's 64 tokens.
    for (int64_t n_tokens : {1, 2, 3, 4, 7, 8, 9, 16, 17, 33, 70}) {
      const std::vector<uint16_t> x = as_bf16(random_floats(rng, n_tokens * s.cols));
      const int64_t y_stride = s.rows + 5;
      const float kSentinel = 1234.5f;
      auto run = [&](const CpuKernels& k, const void* data, WeightLayout layout, const uint16_t* xs,
                     int64_t n) {
        std::vector<float> y(static_cast<size_t>(n * y_stride), kSentinel);
        k.matmul_bf16(MatmulArgs{WeightView{data, WeightType::kBF16, s.rows, s.cols, layout}, n,
                                 y.data(), y_stride, s.row_begin, s.row_end},
                      xs);
        return y;
      };
      const std::vector<float> want = run(*cpu_kernels_for(CpuLevel::kScalar), w.data(),
                                          WeightLayout::kRows, x.data(), n_tokens);
      for (const CpuKernels* k : testing::all_cpu_kernels()) {
        INFO(cpu_level_name(k->level), " rows ", s.rows, " cols ", s.cols, " tokens ", n_tokens,
             " rows [", s.row_begin, ", ", s.row_end, ")");
        const std::vector<float> got =
            run(*k, il.data(), WeightLayout::kInterleaved16, x.data(), n_tokens);
        CHECK(untouched_outside(got, n_tokens, y_stride, s.row_begin, s.row_end, kSentinel));
        CHECK(normalised_error(got, want) <= 1e-5);
        CHECK(normalised_error(got, std::vector<float>(got.size(), 0.0f)) > 0.0);
        // With the interleaved kernel, the last token alone gives the same
        // bits as in the batch (the rows kernels' decode and prefill paths
        // sum in different orders).
        if (!k->interleaved_bf16) continue;
        const int64_t last = n_tokens - 1;
        const std::vector<float> alone =
            run(*k, il.data(), WeightLayout::kInterleaved16, x.data() + last * s.cols, 1);
        bool same = true;
        for (int64_t r = s.row_begin; r < s.row_end; ++r) {
          same = same &&
                 alone[static_cast<size_t>(r)] == got[static_cast<size_t>(last * y_stride + r)];
        }
        CHECK(same);
      }
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels
