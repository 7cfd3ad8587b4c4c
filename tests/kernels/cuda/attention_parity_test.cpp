// CUDA parity of causal attention over a device KV cache (decode and
// prefill kernels) against the scalar CPU attention, per token with its own
// causal context, GQA groups, head sizes up to kMaxHeadDim and contexts that
// are not multiples of the 32-position tile; sliding windows (shorter and
// longer than the context, off the tile) and attention sinks (gpt-oss).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda/attention.cuh"
#include "kernels/kernels.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace dancemoe::testing {
namespace {

namespace kc = kernels::cuda;

struct AttentionCase {
  int64_t n_tokens, pos0, n_heads, n_kv_heads, head_dim;
  int64_t window = 0;
  bool sinks = false;
};

enum class Kernel { kPrefill, kDecode, kDecodeSplit };

// Returns the normalised error of the GPU kernel against the CPU reference.
double run_case(const AttentionCase& c, Kernel kernel, std::mt19937& rng) {
  const kernels::CpuKernels& ref = *kernels::cpu_kernels_for(kernels::CpuLevel::kScalar);
  const int64_t q_dim = c.n_heads * c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  const int64_t capacity = c.pos0 + c.n_tokens + 3;
  const std::vector<float> q = random_floats(rng, c.n_tokens * q_dim, -2.0f, 2.0f);
  const std::vector<float> k = random_floats(rng, capacity * kv_dim, -2.0f, 2.0f);
  const std::vector<float> v = random_floats(rng, capacity * kv_dim);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const std::vector<float> sinks = random_floats(rng, c.n_heads, -3.0f, 3.0f);

  std::vector<float> want(c.n_tokens * q_dim);
  std::vector<float> scratch(capacity);
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    // As CpuForward::attend: the window's positions only.
    const int64_t n_ctx = c.pos0 + t + 1;
    const int64_t first = c.window > 0 ? std::max<int64_t>(0, n_ctx - c.window) : 0;
    kernels::AttentionArgs a;
    a.q = q.data() + t * q_dim;
    a.k = k.data() + first * kv_dim;
    a.v = v.data() + first * kv_dim;
    a.kv_stride = kv_dim;
    a.n_ctx = n_ctx - first;
    a.sinks = c.sinks ? sinks.data() : nullptr;
    a.n_heads = c.n_heads;
    a.n_kv_heads = c.n_kv_heads;
    a.head_dim = c.head_dim;
    a.scale = scale;
    a.out = want.data() + t * q_dim;
    a.scratch = scratch.data();
    a.head_begin = 0;
    a.head_end = c.n_heads;
    ref.attention(a);
  }

  DeviceArray<float> d_q(q), d_k(k), d_v(v), d_sinks(sinks), d_out(want.size());
  DeviceArray<uint16_t> d_bf16(want.size());
  DeviceArray<int32_t> d_pos(std::vector<int32_t>{static_cast<int32_t>(c.pos0)});
  // Filled with NaN: a split state the combine reads but no block wrote
  // would show.
  DeviceArray<float> d_partials(std::vector<float>(
      static_cast<size_t>(kc::decode_partial_floats(c.n_tokens, c.n_heads, c.head_dim)), NAN));
  kc::AttentionArgs a;
  a.q = d_q.get();
  a.q_stride = q_dim;
  a.k_cache = d_k.get();
  a.v_cache = d_v.get();
  a.kv_stride = kv_dim;
  a.d_pos0 = d_pos.get();
  a.n_tokens = c.n_tokens;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = scale;
  a.window = c.window;
  a.sinks = c.sinks ? d_sinks.get() : nullptr;
  a.out = d_out.get();
  a.out_stride = q_dim;
  a.out_bf16 = d_bf16.get();
  if (kernel == Kernel::kPrefill) {
    kc::attention_prefill(a, nullptr);
  } else {
    if (kernel == Kernel::kDecodeSplit) a.partials = d_partials.get();
    kc::attention_decode(a, nullptr);
  }
  sync_and_check();
  const std::vector<float> got = d_out.download();
  const std::vector<uint16_t> got_bf16 = d_bf16.download();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got_bf16[i] == kernels::float_to_bf16(got[i]));
  return normalised_error(got, want);
}

TEST_CASE("cuda parity: attention decode and prefill against the CPU reference") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(21);
  const AttentionCase cases[] = {
      {1, 0, 4, 2, 16},
      {1, 30, 4, 4, 64},
      {1, 31, 8, 2, 64},
      {1, 32, 16, 8, 64},
      {1, 256, 3, 1, 128},
      {2, 99, 5, 5, 256},
      {3, 0, 4, 2, 16},
      {9, 0, 16, 8, 64},
      {17, 5, 4, 1, 128},
      {33, 40, 6, 3, 64},
      {64, 0, 16, 8, 64},
      {8, 300, 2, 2, 256},
      {5, 7, 4, 2, 2},
      {40, 0, 2, 1, 48},
      // sliding windows and sinks
      {1, 100, 4, 2, 64, 16},
      {2, 99, 4, 2, 64, 40, true},
      {1, 5, 4, 4, 64, 128, true},
      {1, 0, 4, 2, 16, 0, true},
      {33, 40, 6, 3, 64, 7},
      {64, 0, 8, 2, 64, 33, true},
      {17, 200, 4, 1, 128, 50, true},
      {9, 3, 2, 2, 256, 1},
      {40, 70, 2, 1, 48, 32, true},
      // long caches: every split of the flash-decoding kernel has tiles,
      // shares end off the tile, windows cut the first shares
      {1, 1500, 8, 2, 128},
      {2, 1000, 4, 4, 64, 0, true},
      {1, 2047, 4, 2, 64, 700, true},
      {1, 530, 2, 1, 256, 0, true},
  };
  double worst_decode = 0.0, worst_split = 0.0, worst_prefill = 0.0;
  for (const AttentionCase& c : cases) {
    const double e_decode = run_case(c, Kernel::kDecode, rng);
    const double e_split = run_case(c, Kernel::kDecodeSplit, rng);
    const double e_prefill = run_case(c, Kernel::kPrefill, rng);
    INFO("n " << c.n_tokens << " pos0 " << c.pos0 << " heads " << c.n_heads << "/" << c.n_kv_heads
              << " d " << c.head_dim << " window " << c.window << " sinks " << c.sinks);
    CHECK_MESSAGE(e_decode < 1e-5, "decode: " << e_decode);
    CHECK_MESSAGE(e_split < 1e-5, "decode, split: " << e_split);
    CHECK_MESSAGE(e_prefill < 1e-5, "prefill: " << e_prefill);
    worst_decode = std::fmax(worst_decode, e_decode);
    worst_split = std::fmax(worst_split, e_split);
    worst_prefill = std::fmax(worst_prefill, e_prefill);
  }
  MESSAGE("parity attention: decode " << worst_decode << ", decode split " << worst_split
                                      << ", prefill " << worst_prefill);
}

}  // namespace
}  // namespace dancemoe::testing
