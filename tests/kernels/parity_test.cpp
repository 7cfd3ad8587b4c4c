// Every op of every SIMD level this CPU has, against the scalar reference,
// with a per-op tolerance on the normalised error:
//   max_i |simd_i - ref_i| / max_i |ref_i|
// (bit-exact for the conversions). Sizes are odd on purpose so that every
// tail path runs; matmuls also use row ranges not starting at 0, several
// token counts, and a wider y than the rows written (the rest must be
// untouched).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/numeric.h"
#include "kernels/kernels.h"
#include "tests/support/cpu_levels.h"

namespace dancemoe::kernels {
namespace {

const CpuKernels& reference() { return *cpu_kernels_for(CpuLevel::kScalar); }

std::string level_name(const CpuKernels& k) { return std::string(cpu_level_name(k.level)); }

// Uniform in [lo, hi]; never all equal.
std::vector<float> random_floats(std::mt19937& rng, int64_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16(v[i]);
  return out;
}

// Finite f16 values of magnitude 2^-6 .. 2^2 with random mantissas and signs.
std::vector<uint16_t> random_f16(std::mt19937& rng, int64_t n) {
  std::uniform_int_distribution<int> exponent(9, 17);
  std::uniform_int_distribution<int> mantissa(0, 0x3ff);
  std::uniform_int_distribution<int> sign(0, 1);
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (uint16_t& h : v)
    h = static_cast<uint16_t>(sign(rng) << 15 | exponent(rng) << 10 | mantissa(rng));
  return v;
}

double normalised_error(const float* got, const float* want, int64_t n) {
  double max_diff = 0.0;
  double max_ref = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    max_diff = std::fmax(max_diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    max_ref = std::fmax(max_ref, std::fabs(static_cast<double>(want[i])));
  }
  return max_diff / (max_ref > 0.0 ? max_ref : 1.0);
}

double normalised_error(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  return normalised_error(got.data(), want.data(), static_cast<int64_t>(got.size()));
}

const int64_t kSizes[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1023, 1025};

struct MatmulCase {
  int64_t rows, cols, n_tokens, row_begin, row_end;
};

// Small odd shapes, decode (1 token), the token counts of every tile size,
// one prefill-sized case, and empty rows (cols = 0: every output is 0).
const MatmulCase kMatmulCases[] = {
    {1, 1, 1, 0, 1},       {5, 3, 2, 1, 4},      {13, 17, 3, 2, 13},   {9, 33, 1, 0, 9},
    {11, 100, 4, 3, 10},   {7, 1023, 5, 0, 7},   {17, 1025, 1, 4, 17}, {6, 64, 6, 0, 6},
    {10, 48, 7, 1, 9},     {33, 256, 13, 5, 30}, {3, 32, 8, 0, 3},     {21, 129, 2, 0, 21},
    {70, 1024, 32, 3, 67}, {4, 0, 5, 0, 4},
};

template <class Run>
void check_matmul(const char* op, const MatmulCase& c, double tolerance, Run&& run) {
  // y is wider than rows and pre-filled, so out-of-range writes show up.
  const int64_t y_stride = c.rows + 3;
  const float kSentinel = 1234.5f;
  std::vector<float> want(static_cast<size_t>(c.n_tokens * y_stride), kSentinel);
  run(reference(), want.data(), y_stride);
  for (const CpuKernels* k : testing::simd_cpu_kernels()) {
    std::vector<float> got(want.size(), kSentinel);
    run(*k, got.data(), y_stride);
    INFO(op, " at ", level_name(*k), ": rows ", c.rows, " cols ", c.cols, " tokens ", c.n_tokens,
         " rows [", c.row_begin, ", ", c.row_end, ")");
    bool untouched = true;
    for (int64_t t = 0; t < c.n_tokens; ++t) {
      for (int64_t r = 0; r < y_stride; ++r) {
        if (r >= c.row_begin && r < c.row_end) continue;
        untouched = untouched && got[static_cast<size_t>(t * y_stride + r)] == kSentinel;
      }
    }
    CHECK(untouched);
    CHECK(normalised_error(got, want) <= tolerance);
  }
}

TEST_CASE("kernel parity: the levels under test are reported") {
  std::string names;
  for (const CpuKernels* k : testing::simd_cpu_kernels()) names += level_name(*k) + " ";
  MESSAGE("SIMD levels checked against scalar: ", names.empty() ? "none" : names);
  for (const CpuKernels* k : testing::simd_cpu_kernels()) CHECK(k->level <= detect_cpu_level());
}

TEST_CASE("kernel parity: matmul_f32 with f32, f16 and bf16 weights") {
  std::mt19937 rng(1234);
  for (const MatmulCase& c : kMatmulCases) {
    const std::vector<float> x = random_floats(rng, c.n_tokens * c.cols);
    const std::vector<float> w_f32 = random_floats(rng, c.rows * c.cols);
    const std::vector<uint16_t> w_bf16 = to_bf16(random_floats(rng, c.rows * c.cols));
    const std::vector<uint16_t> w_f16 = random_f16(rng, c.rows * c.cols);
    for (WeightType type : {WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
      const void* data = type == WeightType::kF32   ? static_cast<const void*>(w_f32.data())
                         : type == WeightType::kF16 ? static_cast<const void*>(w_f16.data())
                                                    : static_cast<const void*>(w_bf16.data());
      INFO("weight type ", static_cast<int>(type));
      check_matmul("matmul_f32", c, 2e-5, [&](const CpuKernels& k, float* y, int64_t y_stride) {
        MatmulArgs args;
        args.w = WeightView{data, type, c.rows, c.cols};
        args.n_tokens = c.n_tokens;
        args.y = y;
        args.y_stride = y_stride;
        args.row_begin = c.row_begin;
        args.row_end = c.row_end;
        k.matmul_f32(args, x.data());
      });
    }
  }
}

TEST_CASE("kernel parity: matmul_bf16") {
  std::mt19937 rng(99);
  for (const MatmulCase& c : kMatmulCases) {
    const std::vector<uint16_t> x = to_bf16(random_floats(rng, c.n_tokens * c.cols));
    const std::vector<uint16_t> w = to_bf16(random_floats(rng, c.rows * c.cols));
    check_matmul("matmul_bf16", c, 2e-5, [&](const CpuKernels& k, float* y, int64_t y_stride) {
      MatmulArgs args;
      args.w = WeightView{w.data(), WeightType::kBF16, c.rows, c.cols};
      args.n_tokens = c.n_tokens;
      args.y = y;
      args.y_stride = y_stride;
      args.row_begin = c.row_begin;
      args.row_end = c.row_end;
      k.matmul_bf16(args, x.data());
    });
  }
}

TEST_CASE("kernel parity: rmsnorm, rope, dot and axpy") {
  std::mt19937 rng(7);
  for (int64_t n : kSizes) {
    const std::vector<float> x = random_floats(rng, n, -3.0f, 3.0f);
    const std::vector<float> weight = random_floats(rng, n, 0.5f, 1.5f);
    const std::vector<float> y0 = random_floats(rng, n);
    std::vector<float> want(static_cast<size_t>(n));
    reference().rmsnorm(x.data(), weight.data(), n, 1e-6f, want.data());
    const float want_dot = reference().dot(x.data(), y0.data(), n);
    std::vector<float> want_axpy = y0;
    reference().axpy(0.75f, x.data(), want_axpy.data(), n);
    for (const CpuKernels* k : testing::simd_cpu_kernels()) {
      INFO(level_name(*k), " n ", n);
      std::vector<float> got(static_cast<size_t>(n));
      k->rmsnorm(x.data(), weight.data(), n, 1e-6f, got.data());
      CHECK(normalised_error(got, want) <= 1e-6);
      // Normalised by the sum of |terms|, the scale of the rounding error.
      double scale = 0.0;
      for (int64_t i = 0; i < n; ++i)
        scale += std::fabs(x[static_cast<size_t>(i)] * y0[static_cast<size_t>(i)]);
      CHECK(std::fabs(k->dot(x.data(), y0.data(), n) - want_dot) <= 1e-6 * scale);
      std::vector<float> got_axpy = y0;
      k->axpy(0.75f, x.data(), got_axpy.data(), n);
      CHECK(normalised_error(got_axpy, want_axpy) <= 1e-7);
    }
  }
  for (int64_t head_dim : {2, 6, 16, 34, 64, 128, 130}) {
    const int64_t n_heads = 3;
    const int64_t half = head_dim / 2;
    const std::vector<float> x = random_floats(rng, n_heads * head_dim);
    std::vector<float> cos(static_cast<size_t>(half));
    std::vector<float> sin(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) {
      const double angle = 0.37 * static_cast<double>(i + 1);
      cos[static_cast<size_t>(i)] = static_cast<float>(std::cos(angle));
      sin[static_cast<size_t>(i)] = static_cast<float>(std::sin(angle));
    }
    std::vector<float> want = x;
    reference().rope(want.data(), n_heads, head_dim, cos.data(), sin.data());
    for (const CpuKernels* k : testing::simd_cpu_kernels()) {
      INFO(level_name(*k), " head_dim ", head_dim);
      std::vector<float> got = x;
      k->rope(got.data(), n_heads, head_dim, cos.data(), sin.data());
      CHECK(normalised_error(got, want) <= 1e-6);
    }
  }
}

TEST_CASE("kernel parity: softmax and swiglu (vectorised exp)") {
  std::mt19937 rng(11);
  for (int64_t n : kSizes) {
    const std::vector<float> logits = random_floats(rng, n, -30.0f, 30.0f);
    std::vector<float> want = logits;
    reference().softmax(want.data(), n);
    const std::vector<float> gate = random_floats(rng, n, -20.0f, 20.0f);
    const std::vector<float> up = random_floats(rng, n, -2.0f, 2.0f);
    std::vector<float> want_swiglu(static_cast<size_t>(n));
    reference().swiglu(gate.data(), up.data(), n, want_swiglu.data());
    for (const CpuKernels* k : testing::simd_cpu_kernels()) {
      INFO(level_name(*k), " n ", n);
      std::vector<float> got = logits;
      k->softmax(got.data(), n);
      CHECK(normalised_error(got, want) <= 2e-6);
      double sum = 0.0;
      for (float p : got) sum += p;
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
      // swiglu element by element, relative: exp must be accurate to ~1e-6.
      std::vector<float> got_swiglu(static_cast<size_t>(n));
      k->swiglu(gate.data(), up.data(), n, got_swiglu.data());
      double max_rel = 0.0;
      for (size_t i = 0; i < got_swiglu.size(); ++i) {
        const double ref = want_swiglu[i];
        if (ref == 0.0) continue;
        max_rel = std::fmax(max_rel, std::fabs((got_swiglu[i] - ref) / ref));
      }
      CHECK(max_rel <= 2e-6);
    }
  }
}

TEST_CASE("kernel parity: softmax keeps extreme logits finite and exact at the ends") {
  // exp of large negative differences underflows to 0, the maximum maps to
  // the largest probability, and -inf logits (masking) give exactly 0.
  std::vector<float> logits = {0.0f,  -200.0f, 88.0f, -std::numeric_limits<float>::infinity(),
                               87.5f, -87.0f,  1.0f};
  std::vector<float> want = logits;
  reference().softmax(want.data(), static_cast<int64_t>(want.size()));
  for (const CpuKernels* k : testing::simd_cpu_kernels()) {
    INFO(level_name(*k));
    std::vector<float> got = logits;
    k->softmax(got.data(), static_cast<int64_t>(got.size()));
    for (float p : got) CHECK(std::isfinite(p));
    CHECK(got[3] == 0.0f);
    CHECK(normalised_error(got, want) <= 2e-6);
  }
}

// One query position's attention, heads [begin, end), over f32 keys and
// values of `shape`'s KV heads.
struct AttentionShape {
  int64_t n_heads, n_kv_heads, head_dim, n_ctx, kv_stride;
  float scale;
};
void run_attention(const CpuKernels& kernels, const AttentionShape& shape, const float* q,
                   const float* k, const float* v, int64_t begin, int64_t end, float* out) {
  std::vector<float> scratch(static_cast<size_t>(shape.n_ctx));
  AttentionArgs args;
  args.q = q;
  args.k = k;
  args.v = v;
  args.kv_stride = shape.kv_stride;
  args.n_ctx = shape.n_ctx;
  args.n_heads = shape.n_heads;
  args.n_kv_heads = shape.n_kv_heads;
  args.head_dim = shape.head_dim;
  args.scale = shape.scale;
  args.out = out;
  args.scratch = scratch.data();
  args.head_begin = begin;
  args.head_end = end;
  kernels.attention(args);
}

TEST_CASE("kernel parity: attention over grouped KV heads") {
  std::mt19937 rng(5);
  struct Case {
    int64_t n_heads, n_kv_heads, head_dim, n_ctx, head_begin, head_end;
  };
  const Case cases[] = {{1, 1, 8, 1, 0, 1},
                        {4, 2, 16, 3, 0, 4},
                        {8, 2, 64, 17, 1, 7},
                        {6, 3, 33, 100, 2, 6},
                        {4, 4, 128, 65, 0, 4},
                        {2, 1, 70, 5, 0, 2},
                        {16, 4, 128, 1025, 3, 5},
                        {32, 4, 64, 300, 0, 32},
                        {8, 1, 128, 130, 0, 8},
                        {12, 3, 96, 77, 1, 11},
                        {4, 2, 32, 0, 0, 4},
                        // Groups of 3 and 4 with head_dim % 8 != 0 over a
                        // partial second block: the AVX2 kernel's narrow
                        // value passes and scalar columns.
                        {12, 3, 36, 67, 1, 11},
                        {6, 2, 20, 130, 0, 6}};
  for (const Case& c : cases) {
    const int64_t kv_stride = c.n_kv_heads * c.head_dim + 5;  // padded rows
    const std::vector<float> q = random_floats(rng, c.n_heads * c.head_dim);
    const std::vector<float> k = random_floats(rng, c.n_ctx * kv_stride);
    const std::vector<float> v = random_floats(rng, c.n_ctx * kv_stride);
    const AttentionShape shape{c.n_heads,  c.n_kv_heads,
                               c.head_dim, c.n_ctx,
                               kv_stride,  1.0f / std::sqrt(static_cast<float>(c.head_dim)) * 3.0f};
    auto run = [&](const CpuKernels& kernels, std::vector<float>* out) {
      run_attention(kernels, shape, q.data(), k.data(), v.data(), c.head_begin, c.head_end,
                    out->data());
    };
    std::vector<float> want(static_cast<size_t>(c.n_heads * c.head_dim), 0.0f);
    run(reference(), &want);
    for (const CpuKernels* kernels : testing::simd_cpu_kernels()) {
      INFO(level_name(*kernels), " heads ", c.n_heads, "/", c.n_kv_heads, " head_dim ", c.head_dim,
           " n_ctx ", c.n_ctx);
      std::vector<float> got(want.size(), 0.0f);
      run(*kernels, &got);
      CHECK(normalised_error(got, want) <= 1e-5);
    }
  }
}

// A call over many heads (a token's heads in a batched step) must give each
// head exactly what a call for its own group gives (a lone sequence's
// decode splits its heads among threads): batched output equals unbatched.
TEST_CASE("kernel parity: attention over a range of heads equals each group alone, exactly") {
  std::mt19937 rng(9);
  struct Case {
    int64_t n_heads, n_kv_heads, head_dim, n_ctx;
  };
  const Case cases[] = {{8, 4, 32, 45},  {16, 8, 64, 1000}, {12, 3, 96, 130},
                        {8, 1, 128, 65}, {6, 6, 40, 3},     {12, 4, 36, 67}};
  for (const Case& c : cases) {
    const int64_t kv_stride = c.n_kv_heads * c.head_dim;
    const int64_t group = c.n_heads / c.n_kv_heads;
    const std::vector<float> q = random_floats(rng, c.n_heads * c.head_dim);
    const std::vector<float> k = random_floats(rng, c.n_ctx * kv_stride);
    const std::vector<float> v = random_floats(rng, c.n_ctx * kv_stride);
    const AttentionShape shape{c.n_heads,  c.n_kv_heads,
                               c.head_dim, c.n_ctx,
                               kv_stride,  1.0f / std::sqrt(static_cast<float>(c.head_dim))};
    auto run = [&](const CpuKernels& kernels, int64_t begin, int64_t end, std::vector<float>* out) {
      run_attention(kernels, shape, q.data(), k.data(), v.data(), begin, end, out->data());
    };
    for (const CpuKernels* kernels : testing::all_cpu_kernels()) {
      INFO(level_name(*kernels), " heads ", c.n_heads, "/", c.n_kv_heads, " n_ctx ", c.n_ctx);
      std::vector<float> whole(static_cast<size_t>(c.n_heads * c.head_dim), 0.0f);
      std::vector<float> by_group(whole.size(), 0.0f);
      run(*kernels, 0, c.n_heads, &whole);
      for (int64_t h = 0; h < c.n_heads; h += group) run(*kernels, h, h + group, &by_group);
      CHECK(whole == by_group);
    }
  }
}

TEST_CASE("kernel parity: attention over a bf16 cache equals f32 attention on its values") {
  std::mt19937 rng(17);
  struct Case {
    int64_t n_heads, n_kv_heads, head_dim, n_ctx;
  };
  // Odd head_dims and context lengths reach every kernel's tails.
  const Case cases[] = {{4, 2, 16, 3}, {8, 2, 64, 70},    {6, 3, 33, 100},
                        {2, 1, 70, 5}, {16, 4, 128, 257}, {12, 3, 96, 1}};
  for (const Case& c : cases) {
    const int64_t kv_stride = c.n_kv_heads * c.head_dim + 3;
    const std::vector<float> q = random_floats(rng, c.n_heads * c.head_dim);
    std::vector<float> k = random_floats(rng, c.n_ctx * kv_stride);
    std::vector<float> v = random_floats(rng, c.n_ctx * kv_stride);
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k16[i] = float_to_bf16(k[i]);
      v16[i] = float_to_bf16(v[i]);
      k[i] = bf16_to_float(k16[i]);  // the f32 cache holds the same values
      v[i] = bf16_to_float(v16[i]);
    }
    auto run = [&](const CpuKernels& kernels, bool bf16, std::vector<float>* out) {
      std::vector<float> scratch(static_cast<size_t>(c.n_ctx));
      AttentionArgs args;
      args.q = q.data();
      if (bf16) {
        args.k_bf16 = k16.data();
        args.v_bf16 = v16.data();
      } else {
        args.k = k.data();
        args.v = v.data();
      }
      args.kv_stride = kv_stride;
      args.n_ctx = c.n_ctx;
      args.n_heads = c.n_heads;
      args.n_kv_heads = c.n_kv_heads;
      args.head_dim = c.head_dim;
      args.scale = 0.4f;
      args.out = out->data();
      args.scratch = scratch.data();
      args.head_begin = 0;
      args.head_end = c.n_heads;
      kernels.attention(args);
    };
    std::vector<float> want(static_cast<size_t>(c.n_heads * c.head_dim), 0.0f);
    run(reference(), false, &want);
    std::vector<const CpuKernels*> levels = testing::simd_cpu_kernels();
    levels.insert(levels.begin(), &reference());
    for (const CpuKernels* kernels : levels) {
      INFO(level_name(*kernels), " heads ", c.n_heads, "/", c.n_kv_heads, " head_dim ", c.head_dim,
           " n_ctx ", c.n_ctx);
      std::vector<float> f32(want.size(), 0.0f), bf16(want.size(), 0.0f);
      run(*kernels, false, &f32);
      run(*kernels, true, &bf16);
      // Widening a bf16 is exact: the same sums as the f32 cache's, up to the
      // order of a few additions in the kernels' tails.
      CHECK(normalised_error(bf16, f32) <= 1e-6);
      CHECK(normalised_error(bf16, want) <= 1e-5);
    }
  }
}

TEST_CASE("kernel parity: attention sinks join the softmax without a value") {
  std::mt19937 rng(11);
  const int64_t n_heads = 8, n_kv_heads = 2, head_dim = 40;
  for (int64_t n_ctx : {int64_t{1}, int64_t{7}, int64_t{70}, int64_t{129}}) {
    const int64_t kv_stride = n_kv_heads * head_dim;
    const std::vector<float> q = random_floats(rng, n_heads * head_dim);
    const std::vector<float> k = random_floats(rng, n_ctx * kv_stride);
    const std::vector<float> v = random_floats(rng, n_ctx * kv_stride);
    // Sinks from far below the scores (no effect) to far above (most weight).
    const std::vector<float> sinks = {-30.0f, -1.0f, 0.0f, 0.5f, 1.0f, 2.0f, 4.0f, 30.0f};
    auto run = [&](const CpuKernels& kernels, const float* with_sinks, std::vector<float>* out) {
      std::vector<float> scratch(static_cast<size_t>(n_ctx));
      AttentionArgs args;
      args.q = q.data();
      args.k = k.data();
      args.v = v.data();
      args.kv_stride = kv_stride;
      args.n_ctx = n_ctx;
      args.n_heads = n_heads;
      args.n_kv_heads = n_kv_heads;
      args.head_dim = head_dim;
      args.scale = 0.5f;
      args.out = out->data();
      args.scratch = scratch.data();
      args.sinks = with_sinks;
      args.head_begin = 0;
      args.head_end = n_heads;
      kernels.attention(args);
    };
    std::vector<float> plain(static_cast<size_t>(n_heads * head_dim));
    std::vector<float> want(plain.size());
    run(reference(), nullptr, &plain);
    run(reference(), sinks.data(), &want);
    // The reference by its definition: out_sink = out * Z / (Z + exp(sink)),
    // Z = sum_j exp(s_j).
    for (int64_t h = 0; h < n_heads; ++h) {
      const int64_t kvh = h / (n_heads / n_kv_heads);
      double z = 0.0;
      for (int64_t j = 0; j < n_ctx; ++j) {
        double s = 0.0;
        for (int64_t d = 0; d < head_dim; ++d) {
          s += q[static_cast<size_t>(h * head_dim + d)] *
               k[static_cast<size_t>(j * kv_stride + kvh * head_dim + d)];
        }
        z += std::exp(0.5 * s);
      }
      const double keep = z / (z + std::exp(static_cast<double>(sinks[static_cast<size_t>(h)])));
      for (int64_t d = 0; d < head_dim; ++d) {
        const size_t i = static_cast<size_t>(h * head_dim + d);
        CHECK(want[i] == doctest::Approx(plain[i] * keep).epsilon(1e-4).scale(1e-6));
      }
    }
    for (const CpuKernels* kernels : testing::simd_cpu_kernels()) {
      INFO(level_name(*kernels), " n_ctx ", n_ctx);
      std::vector<float> got(want.size(), 0.0f);
      run(*kernels, sinks.data(), &got);
      CHECK(normalised_error(got, want) <= 1e-5);
    }
  }
}

TEST_CASE("kernel parity: conversions are bit-exact at every size") {
  std::mt19937 rng(3);
  for (int64_t n : kSizes) {
    const std::vector<float> f = random_floats(rng, n, -1e4f, 1e4f);
    const std::vector<uint16_t> bf16 = to_bf16(f);
    const std::vector<uint16_t> f16 = random_f16(rng, n);
    std::vector<float> want_bf16(static_cast<size_t>(n)), want_f16(static_cast<size_t>(n));
    std::vector<uint16_t> want_round(static_cast<size_t>(n));
    reference().bf16_to_f32(bf16.data(), n, want_bf16.data());
    reference().f16_to_f32(f16.data(), n, want_f16.data());
    reference().f32_to_bf16(f.data(), n, want_round.data());
    for (const CpuKernels* k : testing::simd_cpu_kernels()) {
      INFO(level_name(*k), " n ", n);
      std::vector<float> got(static_cast<size_t>(n));
      k->bf16_to_f32(bf16.data(), n, got.data());
      CHECK(std::memcmp(got.data(), want_bf16.data(), got.size() * sizeof(float)) == 0);
      k->f16_to_f32(f16.data(), n, got.data());
      CHECK(std::memcmp(got.data(), want_f16.data(), got.size() * sizeof(float)) == 0);
      std::vector<uint16_t> got_round(static_cast<size_t>(n));
      k->f32_to_bf16(f.data(), n, got_round.data());
      CHECK(got_round == want_round);
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels
