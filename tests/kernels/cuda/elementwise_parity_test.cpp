// CUDA parity of the small ops against the scalar CPU reference: embedding,
// RMSNorm (wide rows and per-head rows), RoPE (tables and rotation), the
// fused qk-norm + RoPE + KV-cache store, SwiGLU and the conversions. Odd
// sizes on purpose; errors are normalised (max |diff| / max |ref|).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/qkv_prepare.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "kernels/kernels.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace dancemoe::testing {
namespace {

namespace kc = kernels::cuda;

const kernels::CpuKernels& ref() { return *kernels::cpu_kernels_for(kernels::CpuLevel::kScalar); }

TEST_CASE("cuda parity: embedding rows are the exact bf16 values") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(11);
  const int64_t vocab = 37, hidden = 45;
  const std::vector<uint16_t> table = to_bf16(random_floats(rng, vocab * hidden));
  const std::vector<int32_t> ids = {0, 36, 5, 5, 17};
  DeviceArray<uint16_t> d_table(table);
  DeviceArray<int32_t> d_ids(ids);
  DeviceArray<float> d_out(ids.size() * hidden);
  kc::embedding(d_table.get(), hidden, d_ids.get(), static_cast<int64_t>(ids.size()), d_out.get(),
                nullptr);
  sync_and_check();
  const std::vector<float> got = d_out.download();
  for (size_t t = 0; t < ids.size(); ++t) {
    for (int64_t c = 0; c < hidden; ++c) {
      REQUIRE(got[t * hidden + c] == kernels::bf16_to_float(table[ids[t] * hidden + c]));
    }
  }
}

TEST_CASE("cuda parity: rmsnorm of wide and per-head rows, with the bf16 copy") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(12);
  double worst = 0.0;
  for (int64_t width : {1, 3, 16, 17, 64, 100, 255, 256, 257, 1023, 1025, 4096}) {
    for (int64_t n_rows : {1, 3, 7}) {
      const int64_t stride = width + 3;  // strided rows
      const std::vector<float> x = random_floats(rng, n_rows * stride, -3.0f, 3.0f);
      const std::vector<float> w = random_floats(rng, width, 0.5f, 1.5f);
      std::vector<float> want(n_rows * width);
      for (int64_t r = 0; r < n_rows; ++r) {
        ref().rmsnorm(x.data() + r * stride, w.data(), width, 1e-6f, want.data() + r * width);
      }
      DeviceArray<float> d_x(x), d_w(w), d_out(n_rows * width);
      DeviceArray<uint16_t> d_bf16(n_rows * width);
      kc::RmsNormArgs a;
      a.x = d_x.get();
      a.x_stride = stride;
      a.weight = d_w.get();
      a.n_rows = n_rows;
      a.width = width;
      a.eps = 1e-6f;
      a.out = d_out.get();
      a.out_stride = width;
      a.out_bf16 = d_bf16.get();
      a.out_bf16_stride = width;
      kc::rmsnorm(a, nullptr);
      sync_and_check();
      const std::vector<float> got = d_out.download();
      const double err = normalised_error(got, want);
      CHECK_MESSAGE(err < 1e-5, "width " << width << " rows " << n_rows << " error " << err);
      worst = std::fmax(worst, err);
      const std::vector<uint16_t> got_bf16 = d_bf16.download();
      for (size_t i = 0; i < got.size(); ++i)
        REQUIRE(got_bf16[i] == kernels::float_to_bf16(got[i]));
    }
  }
  MESSAGE("parity rmsnorm: max normalised error " << worst);
}

// The CPU forward's RoPE tables: angle in double, rounded once.
void cpu_rope_tables(const std::vector<double>& inv_freq, int64_t pos0, int64_t n,
                     std::vector<float>* cos_t, std::vector<float>* sin_t) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  cos_t->resize(n * half);
  sin_t->resize(n * half);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(pos0 + t) * inv_freq[i];
      (*cos_t)[t * half + i] = static_cast<float>(std::cos(angle));
      (*sin_t)[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

std::vector<double> inv_freqs(int64_t head_dim, double theta) {
  std::vector<double> f(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    f[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / head_dim);
  }
  return f;
}

TEST_CASE("cuda parity: rope tables and rotation at odd head counts and positions") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(13);
  double worst_table = 0.0, worst_rope = 0.0;
  for (int64_t head_dim : {2, 16, 64, 128, 256}) {
    for (int64_t pos0 : {0, 7, 4093}) {
      const int64_t n = 5, n_heads = 3, stride = n_heads * head_dim + 2;
      const std::vector<double> freq = inv_freqs(head_dim, 1e6);
      std::vector<float> cos_t, sin_t;
      cpu_rope_tables(freq, pos0, n, &cos_t, &sin_t);
      DeviceArray<double> d_freq(freq);
      DeviceArray<int32_t> d_pos(std::vector<int32_t>{static_cast<int32_t>(pos0)});
      DeviceArray<float> d_cos(cos_t.size()), d_sin(sin_t.size());
      kc::rope_tables(d_freq.get(), head_dim / 2, d_pos.get(), n, d_cos.get(), d_sin.get(),
                      nullptr);
      sync_and_check();
      worst_table = std::fmax(worst_table, normalised_error(d_cos.download(), cos_t));
      worst_table = std::fmax(worst_table, normalised_error(d_sin.download(), sin_t));

      std::vector<float> x = random_floats(rng, n * stride);
      DeviceArray<float> d_x(x);
      d_cos.upload(cos_t);
      d_sin.upload(sin_t);
      kc::rope(d_x.get(), n, stride, n_heads, head_dim, d_cos.get(), d_sin.get(), nullptr);
      sync_and_check();
      const int64_t half = head_dim / 2;
      for (int64_t t = 0; t < n; ++t) {
        ref().rope(x.data() + t * stride, n_heads, head_dim, cos_t.data() + t * half,
                   sin_t.data() + t * half);
      }
      worst_rope = std::fmax(worst_rope, normalised_error(d_x.download(), x));
    }
  }
  CHECK(worst_table < 1e-6);
  CHECK(worst_rope < 1e-6);
  MESSAGE("parity rope: tables " << worst_table << ", rotation " << worst_rope);
}

// CpuForward::rotate's layouts: the pairs layout permutes (x[2i], x[2i+1])
// to halves over the rotating dims, then the leading `rotary` dims rotate.
void cpu_rotate(float* x, int64_t n_heads, int64_t head_dim, int64_t rotary, bool pairs,
                const float* cos, const float* sin) {
  for (int64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    if (pairs) {
      std::vector<float> tmp(static_cast<size_t>(rotary));
      for (int64_t i = 0; i < rotary / 2; ++i) {
        tmp[static_cast<size_t>(i)] = head[2 * i];
        tmp[static_cast<size_t>(rotary / 2 + i)] = head[2 * i + 1];
      }
      std::memcpy(head, tmp.data(), static_cast<size_t>(rotary) * sizeof(float));
    }
    ref().rope(head, 1, rotary, cos, sin);
  }
}

TEST_CASE("cuda parity: qk norm, rope (partial, pairwise, scaled) and the kv-cache store") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(14);
  double worst = 0.0;
  struct Rope {
    int64_t rotary_divisor;  // rotary_dim = head_dim / divisor
    bool pairs;
    float scale;
  };
  const Rope ropes[] = {{1, false, 1.0f}, {2, false, 1.0f},  {1, true, 1.0f},
                        {4, true, 1.0f},  {1, false, 1.25f}, {2, false, 0.8f}};
  for (int64_t head_dim : {16, 64, 128}) {
    for (bool norm : {false, true}) {
      for (const Rope& rope : ropes) {
        const int64_t n = 3, n_heads = 6, n_kv = 3, pos0 = 5, capacity = 11;
        const int64_t q_dim = n_heads * head_dim, kv_dim = n_kv * head_dim;
        const int64_t rotary = head_dim / rope.rotary_divisor, half = rotary / 2;
        std::vector<float> q = random_floats(rng, n * q_dim, -2.0f, 2.0f);
        const std::vector<float> k = random_floats(rng, n * kv_dim, -2.0f, 2.0f);
        const std::vector<float> v = random_floats(rng, n * kv_dim);
        const std::vector<float> qn = random_floats(rng, head_dim, 0.5f, 1.5f);
        const std::vector<float> kn = random_floats(rng, head_dim, 0.5f, 1.5f);
        std::vector<float> cos_t, sin_t;
        cpu_rope_tables(inv_freqs(rotary, 1e4), pos0, n, &cos_t, &sin_t);
        // The CPU's tables carry the scale (rope.h's attention factor).
        std::vector<float> cos_s = cos_t, sin_s = sin_t;
        for (float& x : cos_s) x *= rope.scale;
        for (float& x : sin_s) x *= rope.scale;
        std::vector<float> k_cache(capacity * kv_dim, 0.0f), v_cache(capacity * kv_dim, 0.0f);
        DeviceArray<float> d_q(q), d_k(k), d_v(v), d_qn(qn), d_kn(kn), d_cos(cos_t), d_sin(sin_t);
        DeviceArray<float> d_kc(k_cache), d_vc(v_cache);
        DeviceArray<int32_t> d_pos(std::vector<int32_t>{static_cast<int32_t>(pos0)});

        // CPU: the forward pass's per-token sequence.
        for (int64_t t = 0; t < n; ++t) {
          float* qt = q.data() + t * q_dim;
          std::vector<float> kt(k.begin() + t * kv_dim, k.begin() + (t + 1) * kv_dim);
          if (norm) {
            for (int64_t h = 0; h < n_heads; ++h)
              ref().rmsnorm(qt + h * head_dim, qn.data(), head_dim, 1e-6f, qt + h * head_dim);
            for (int64_t h = 0; h < n_kv; ++h)
              ref().rmsnorm(kt.data() + h * head_dim, kn.data(), head_dim, 1e-6f,
                            kt.data() + h * head_dim);
          }
          cpu_rotate(qt, n_heads, head_dim, rotary, rope.pairs, cos_s.data() + t * half,
                     sin_s.data() + t * half);
          cpu_rotate(kt.data(), n_kv, head_dim, rotary, rope.pairs, cos_s.data() + t * half,
                     sin_s.data() + t * half);
          std::memcpy(&k_cache[(pos0 + t) * kv_dim], kt.data(), kv_dim * sizeof(float));
          std::memcpy(&v_cache[(pos0 + t) * kv_dim], &v[t * kv_dim], kv_dim * sizeof(float));
        }
        kc::QkvPrepareArgs a;
        a.q = d_q.get();
        a.q_stride = q_dim;
        a.k = d_k.get();
        a.v = d_v.get();
        a.kv_stride = kv_dim;
        a.k_cache = d_kc.get();
        a.v_cache = d_vc.get();
        a.d_pos0 = d_pos.get();
        a.n_tokens = n;
        a.n_heads = n_heads;
        a.n_kv_heads = n_kv;
        a.head_dim = head_dim;
        a.q_norm = norm ? d_qn.get() : nullptr;
        a.k_norm = norm ? d_kn.get() : nullptr;
        a.cos = d_cos.get();
        a.sin = d_sin.get();
        a.rotary_dim = rotary;
        a.pairs = rope.pairs;
        a.rope_scale = rope.scale;
        kc::qkv_prepare(a, nullptr);
        sync_and_check();
        const double err = std::fmax(normalised_error(d_q.download(), q),
                                     std::fmax(normalised_error(d_kc.download(), k_cache),
                                               normalised_error(d_vc.download(), v_cache)));
        CHECK_MESSAGE(err < 1e-5, "head_dim " << head_dim << " norm " << norm << " rotary "
                                              << rotary << " pairs " << rope.pairs << " scale "
                                              << rope.scale << " error " << err);
        worst = std::fmax(worst, err);
      }
    }
  }
  MESSAGE("parity qkv_prepare: max normalised error " << worst);
}

TEST_CASE("cuda parity: sigmoid in place matches the CPU's 1 / (1 + exp(-x))") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(15);
  const std::vector<float> x = random_floats(rng, 1000, -12.0f, 12.0f);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = 1.0f / (1.0f + std::exp(-x[i]));
  DeviceArray<float> d_x(x);
  kc::sigmoid(d_x.get(), static_cast<int64_t>(x.size()), nullptr);
  sync_and_check();
  const double err = normalised_error(d_x.download(), want);
  CHECK(err < 1e-6);
  MESSAGE("parity sigmoid: " << err);
}

TEST_CASE("cuda parity: swiglu, axpy and the bf16 conversions") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(15);
  for (int64_t n : {1, 7, 33, 1025}) {
    const std::vector<float> g = random_floats(rng, n, -8.0f, 8.0f);
    const std::vector<float> u = random_floats(rng, n, -2.0f, 2.0f);
    std::vector<float> want(n);
    ref().swiglu(g.data(), u.data(), n, want.data());
    DeviceArray<float> d_g(g), d_u(u), d_out(n);
    DeviceArray<uint16_t> d_bf16(n);
    kc::swiglu(d_g.get(), d_u.get(), n, d_out.get(), d_bf16.get(), nullptr);
    sync_and_check();
    const std::vector<float> got = d_out.download();
    CHECK(normalised_error(got, want) < 1e-6);

    std::vector<uint16_t> want_bf16(n);
    ref().f32_to_bf16(g.data(), n, want_bf16.data());
    kc::f32_to_bf16(d_g.get(), n, d_bf16.get(), nullptr);
    DeviceArray<float> d_back(n);
    kc::bf16_to_f32(d_bf16.get(), n, d_back.get(), nullptr);
    kc::axpy(0.5f, d_g.get(), d_u.get(), n, nullptr);
    sync_and_check();
    REQUIRE(d_bf16.download() == want_bf16);
    REQUIRE(d_back.download() == from_bf16(want_bf16));
    std::vector<float> y = u;
    ref().axpy(0.5f, g.data(), y.data(), n);
    CHECK(normalised_error(d_u.download(), y) < 1e-6);
  }
}

}  // namespace
}  // namespace dancemoe::testing
