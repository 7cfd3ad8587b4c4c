// CUDA parity of multi-head latent attention's two ops against a scalar
// reference that follows CpuForward's latent path
// (common/backend/cpu/cpu_latent_attention.cpp) step by step:
// latent_prepare (q_pe rotated in place, pairs and halves, YaRN's factor on
// cos / sin; the cache row [rmsnorm(c), rope(kpe)] at pos0 + t, no other
// position touched) and latent_attention (absorbed: W_UK^T q_nope, one
// shared key/value head over the cached rows, W_UV o_lat; bf16 copy and
// output stride). Sizes: the tiny preset's, odd ones, more tokens than a
// block's 8, contexts across the 256-position chunks, DeepSeek's real head
// (nope 128, rope 64, rank 512, v 128) and the largest rank the kernels take.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cuda/latent_attention.cuh"
#include "kernels/cuda/latent_prepare.cuh"
#include "kernels/kernels.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace dancemoe::testing {
namespace {

namespace kc = kernels::cuda;

struct LatentCase {
  int64_t n_tokens, pos0, n_heads, nope, rope, rank, v_dim;
};

// Rotates x[0, r) in place as CpuForward::rotate does: pairs permuted to
// halves first, then the rotate-half RoPE of the scalar kernels.
void rotate_reference(const kernels::CpuKernels& ref, float* x, int64_t r, bool pairs,
                      const float* cos, const float* sin) {
  if (pairs) {
    std::vector<float> tmp(static_cast<size_t>(r));
    for (int64_t i = 0; i < r / 2; ++i) {
      tmp[static_cast<size_t>(i)] = x[2 * i];
      tmp[static_cast<size_t>(r / 2 + i)] = x[2 * i + 1];
    }
    std::memcpy(x, tmp.data(), static_cast<size_t>(r) * sizeof(float));
  }
  ref.rope(x, 1, r, cos, sin);
}

void check_prepare(const LatentCase& c, bool pairs, std::mt19937& rng) {
  const kernels::CpuKernels& ref = *kernels::cpu_kernels_for(kernels::CpuLevel::kScalar);
  const int64_t head_dim = c.nope + c.rope;
  const int64_t q_stride = c.n_heads * head_dim + 5;  // a stride wider than the heads
  const int64_t kv_stride = c.rank + c.rope + 3;
  const int64_t row = c.rank + c.rope;
  const int64_t capacity = c.pos0 + c.n_tokens + 2;
  const int64_t half = c.rope / 2;
  const float rope_scale = 1.25f;
  const float eps = 1e-6f;
  std::vector<float> q = random_floats(rng, static_cast<size_t>(c.n_tokens * q_stride), -2, 2);
  const std::vector<float> kv =
      random_floats(rng, static_cast<size_t>(c.n_tokens * kv_stride), -2, 2);
  const std::vector<float> norm = random_floats(rng, static_cast<size_t>(c.rank), 0.5f, 1.5f);
  std::vector<float> cos(static_cast<size_t>(c.n_tokens * half));
  std::vector<float> sin(cos.size());
  for (size_t i = 0; i < cos.size(); ++i) {
    const float angle = std::uniform_real_distribution<float>(-3.1f, 3.1f)(rng);
    cos[i] = std::cos(angle);
    sin[i] = std::sin(angle);
  }
  std::vector<float> cache(static_cast<size_t>(capacity * row), 7.0f);  // untouched sentinel

  std::vector<float> want_q = q;
  std::vector<float> want_cache = cache;
  std::vector<float> cos_s(static_cast<size_t>(half)), sin_s(static_cast<size_t>(half));
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    for (int64_t i = 0; i < half; ++i) {  // the CPU's tables carry the factor
      cos_s[static_cast<size_t>(i)] = cos[static_cast<size_t>(t * half + i)] * rope_scale;
      sin_s[static_cast<size_t>(i)] = sin[static_cast<size_t>(t * half + i)] * rope_scale;
    }
    for (int64_t h = 0; h < c.n_heads; ++h) {
      rotate_reference(ref, want_q.data() + t * q_stride + h * head_dim + c.nope, c.rope, pairs,
                       cos_s.data(), sin_s.data());
    }
    std::vector<float> kpe(kv.begin() + t * kv_stride + c.rank,
                           kv.begin() + t * kv_stride + c.rank + c.rope);
    rotate_reference(ref, kpe.data(), c.rope, pairs, cos_s.data(), sin_s.data());
    float* dst = want_cache.data() + (c.pos0 + t) * row;
    ref.rmsnorm(kv.data() + t * kv_stride, norm.data(), c.rank, eps, dst);
    std::copy(kpe.begin(), kpe.end(), dst + c.rank);
  }

  DeviceArray<float> d_q(q), d_kv(kv), d_norm(norm), d_cos(cos), d_sin(sin), d_cache(cache);
  DeviceArray<int32_t> d_pos(std::vector<int32_t>{static_cast<int32_t>(c.pos0)});
  kc::LatentPrepareArgs a;
  a.q = d_q.get();
  a.q_stride = q_stride;
  a.kv = d_kv.get();
  a.kv_stride = kv_stride;
  a.norm = d_norm.get();
  a.eps = eps;
  a.cache = d_cache.get();
  a.d_pos0 = d_pos.get();
  a.n_tokens = c.n_tokens;
  a.n_heads = c.n_heads;
  a.nope = c.nope;
  a.rope = c.rope;
  a.rank = c.rank;
  a.cos = d_cos.get();
  a.sin = d_sin.get();
  a.pairs = pairs;
  a.rope_scale = rope_scale;
  kc::latent_prepare(a, nullptr);
  sync_and_check();
  const double e_q = normalised_error(d_q.download(), want_q);
  const double e_cache = normalised_error(d_cache.download(), want_cache);
  CHECK_MESSAGE(e_q < 1e-6, "q: " << e_q);
  CHECK_MESSAGE(e_cache < 1e-5, "cache: " << e_cache);
}

// Returns the normalised error of latent_attention against the reference.
double check_attention(const LatentCase& c, std::mt19937& rng) {
  const kernels::CpuKernels& ref = *kernels::cpu_kernels_for(kernels::CpuLevel::kScalar);
  const int64_t head_dim = c.nope + c.rope;
  const int64_t q_stride = c.n_heads * head_dim + 3;
  const int64_t row = c.rank + c.rope;
  const int64_t kv_b_head = c.nope + c.v_dim;
  const int64_t out_stride = c.n_heads * c.v_dim + 2;
  const int64_t capacity = c.pos0 + c.n_tokens + 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim)) * 1.1f;
  const std::vector<float> q = random_floats(rng, static_cast<size_t>(c.n_tokens * q_stride));
  const std::vector<float> cache = random_floats(rng, static_cast<size_t>(capacity * row));
  const std::vector<uint16_t> kv_b =
      to_bf16(random_floats(rng, static_cast<size_t>(c.n_heads * kv_b_head * c.rank), -0.2f, 0.2f));
  const std::vector<float> kv_b_f32 = from_bf16(kv_b);

  std::vector<float> want(static_cast<size_t>(c.n_tokens * out_stride), 0.0f);
  std::vector<float> q_lat(static_cast<size_t>(row)), o_lat(static_cast<size_t>(row));
  std::vector<float> scratch(static_cast<size_t>(capacity));
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    for (int64_t h = 0; h < c.n_heads; ++h) {
      const float* q_nope = q.data() + t * q_stride + h * head_dim;
      std::fill(q_lat.begin(), q_lat.begin() + c.rank, 0.0f);
      for (int64_t d = 0; d < c.nope; ++d) {
        ref.axpy(q_nope[d], kv_b_f32.data() + (h * kv_b_head + d) * c.rank, q_lat.data(), c.rank);
      }
      std::copy(q_nope + c.nope, q_nope + head_dim, q_lat.begin() + c.rank);
      kernels::AttentionArgs a;
      a.q = q_lat.data();
      a.k = cache.data();
      a.v = cache.data();
      a.kv_stride = row;
      a.n_ctx = c.pos0 + t + 1;
      a.n_heads = 1;
      a.n_kv_heads = 1;
      a.head_dim = row;
      a.scale = scale;
      a.out = o_lat.data();
      a.scratch = scratch.data();
      a.head_begin = 0;
      a.head_end = 1;
      ref.attention(a);
      for (int64_t v = 0; v < c.v_dim; ++v) {
        want[static_cast<size_t>(t * out_stride + h * c.v_dim + v)] =
            ref.dot(kv_b_f32.data() + (h * kv_b_head + c.nope + v) * c.rank, o_lat.data(), c.rank);
      }
    }
  }

  DeviceArray<float> d_q(q), d_cache(cache);
  DeviceArray<uint16_t> d_kv_b(kv_b);
  DeviceArray<float> d_q_lat(static_cast<size_t>(c.n_tokens * c.n_heads * row));
  DeviceArray<float> d_o_lat(static_cast<size_t>(c.n_tokens * c.n_heads * c.rank));
  DeviceArray<float> d_out(want.size());
  DeviceArray<uint16_t> d_out_bf16(want.size());
  d_out.fill_bytes(0);
  d_out_bf16.fill_bytes(0);
  DeviceArray<int32_t> d_pos(std::vector<int32_t>{static_cast<int32_t>(c.pos0)});
  kc::LatentAttentionArgs a;
  a.q = d_q.get();
  a.q_stride = q_stride;
  a.cache = d_cache.get();
  a.kv_b = d_kv_b.get();
  a.d_pos0 = d_pos.get();
  a.n_tokens = c.n_tokens;
  a.n_heads = c.n_heads;
  a.nope = c.nope;
  a.rope = c.rope;
  a.rank = c.rank;
  a.v_dim = c.v_dim;
  a.scale = scale;
  a.q_lat = d_q_lat.get();
  a.o_lat = d_o_lat.get();
  a.out = d_out.get();
  a.out_stride = out_stride;
  a.out_bf16 = d_out_bf16.get();
  kc::latent_attention(a, nullptr);
  sync_and_check();
  const std::vector<float> got = d_out.download();
  const std::vector<uint16_t> got_bf16 = d_out_bf16.download();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got_bf16[i] == kernels::float_to_bf16(got[i]));
  return normalised_error(got, want);  // the stride's padding stays 0 in both
}

const LatentCase kCases[] = {
    {1, 0, 4, 16, 8, 32, 16},        // the tiny preset, first position
    {12, 0, 4, 16, 8, 32, 16},       // the tiny preset's prompt
    {1, 40, 4, 16, 8, 32, 16},       // a decode step
    {9, 3, 3, 10, 6, 40, 12},        // odd sizes, 8 + 1 tokens
    {17, 250, 2, 24, 8, 64, 20},     // contexts across the 256-position chunk
    {1, 511, 5, 16, 16, 96, 16},     // a context of two full chunks
    {3, 700, 2, 128, 64, 512, 128},  // DeepSeek-V2/V3's head
    {2, 30, 1, 128, 64, 1024, 64},   // the largest rank
};

TEST_CASE("cuda parity: latent_prepare rotates q_pe and writes the cache rows like the CPU") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(61);
  for (const LatentCase& c : kCases) {
    for (const bool pairs : {true, false}) {
      INFO("n " << c.n_tokens << " pos0 " << c.pos0 << " heads " << c.n_heads << " nope " << c.nope
                << " rope " << c.rope << " rank " << c.rank << " pairs " << pairs);
      check_prepare(c, pairs, rng);
    }
  }
}

TEST_CASE("cuda parity: absorbed latent attention against the CPU's absorbed path") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(62);
  double worst = 0.0;
  for (const LatentCase& c : kCases) {
    INFO("n " << c.n_tokens << " pos0 " << c.pos0 << " heads " << c.n_heads << " nope " << c.nope
              << " rope " << c.rope << " rank " << c.rank << " v " << c.v_dim);
    const double e = check_attention(c, rng);
    CHECK_MESSAGE(e < 1e-4, "latent attention: " << e);
    worst = std::fmax(worst, e);
  }
  MESSAGE("parity latent attention: " << worst);
}

}  // namespace
}  // namespace dancemoe::testing
