// CUDA parity of the MoE ops: the router (softmax / top-k / renormalise in
// both orders, top-k 1 to 8, ties; sigmoid scores, choice bias, group-limited
// choice, scaling) against common/inference/routing.cpp, and the
// grouped expert FFN (grouping, gate/up with SwiGLU or gpt-oss's clamped
// SwiGLU with expert biases, down, weighted combine) against the scalar CPU kernels, through the
// GEMV (decode) and tensor-core GEMM (prefill) paths, with experts nobody chose, experts absent
// from the device (null pointers) and sizes off the 8-element vector width.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/inference/routing.h"
#include "kernels/cuda/expert_ffn.cuh"
#include "kernels/cuda/moe_combine.cuh"
#include "kernels/cuda/moe_group.cuh"
#include "kernels/cuda/router.cuh"
#include "kernels/kernels.h"
#include "tests/kernels/cuda/cuda_test_support.h"

namespace dancemoe::testing {
namespace {

namespace kc = kernels::cuda;

TEST_CASE("cuda parity: router top-k and weights match the CPU routing, ties included") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(41);
  double worst = 0.0;
  for (int64_t n_experts : {8, 33, 64, 128}) {
    for (int64_t top_k = 1; top_k <= 8; ++top_k) {
      for (int order = 0; order < 2; ++order) {
        for (bool norm : {false, true}) {
          for (bool ties : {false, true}) {
            ModelConfig c;
            c.n_experts = n_experts;
            c.n_experts_per_token = top_k;
            c.norm_topk_prob = norm;
            c.router_scoring =
                order == 0 ? RouterScoring::kSoftmaxThenTopK : RouterScoring::kTopKThenSoftmax;
            const int64_t n = 13;
            std::vector<float> logits = random_floats(rng, n * n_experts, -4.0f, 4.0f);
            if (ties) {
              for (float& v : logits) v = std::round(v * 2.0f) / 2.0f;  // many equal values
            }
            RoutingDecision want;
            route_tokens(c, logits.data(), n, &want);

            DeviceArray<float> d_logits(logits), d_w(n * top_k);
            DeviceArray<int32_t> d_ids(n * top_k);
            kc::RouterArgs a;
            a.logits = d_logits.get();
            a.n_tokens = n;
            a.n_experts = n_experts;
            a.top_k = top_k;
            a.order =
                order == 0 ? kc::RouterOrder::kSoftmaxThenTopK : kc::RouterOrder::kTopKThenSoftmax;
            a.norm_topk_prob = norm;
            a.ids = d_ids.get();
            a.weights = d_w.get();
            kc::router_topk(a, nullptr);
            sync_and_check();
            REQUIRE(d_ids.download() == want.expert_ids);
            const std::vector<float> got_w = d_w.download();
            for (size_t i = 0; i < got_w.size(); ++i) {
              worst = std::fmax(worst, std::fabs(got_w[i] - want.weights[i]));
            }
          }
        }
      }
    }
  }
  CHECK(worst < 1e-6);
  MESSAGE("parity router: ids identical, max weight difference " << worst);
}

// DeepSeek-V2/V3, GLM-4.5 routing: sigmoid or softmax scores, the choice
// bias, group-limited choice (both group scores), renormalisation with its
// epsilon and routed_scaling_factor, against route_tokens.
TEST_CASE("cuda parity: sigmoid, choice-biased and group-limited routing match the CPU") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(43);
  struct Shape {
    int64_t n_experts, top_k, n_group, topk_group;
  };
  const Shape shapes[] = {{8, 2, 1, 1},   {64, 6, 8, 3},  {64, 6, 1, 1},
                          {256, 8, 8, 4}, {160, 6, 8, 3}, {16, 4, 4, 1}};
  double worst = 0.0;
  for (const Shape& shape : shapes) {
    for (bool sigmoid : {false, true}) {
      for (bool bias : {false, true}) {
        for (bool top2 : {false, true}) {
          for (bool norm : {false, true}) {
            ModelConfig c;
            c.n_experts = shape.n_experts;
            c.n_experts_per_token = shape.top_k;
            c.n_group = shape.n_group;
            c.topk_group = shape.topk_group;
            c.group_score = top2 ? GroupScore::kTop2Sum : GroupScore::kMax;
            c.norm_topk_prob = norm;
            c.topk_norm_epsilon = norm ? 1e-20f : 0.0f;
            c.routed_scaling_factor = norm ? 2.5 : 1.0;
            c.router_scoring = sigmoid ? RouterScoring::kSigmoid : RouterScoring::kSoftmaxThenTopK;
            const int64_t n = 11;
            const std::vector<float> logits = random_floats(rng, n * c.n_experts, -4.0f, 4.0f);
            const std::vector<float> choice_bias = random_floats(rng, c.n_experts, -0.3f, 0.3f);
            RoutingDecision want;
            route_tokens(c, logits.data(), n, bias ? choice_bias.data() : nullptr, &want);

            DeviceArray<float> d_logits(logits), d_bias(choice_bias),
                d_w(n * c.n_experts_per_token);
            DeviceArray<int32_t> d_ids(n * c.n_experts_per_token);
            kc::RouterArgs a;
            a.logits = d_logits.get();
            a.n_tokens = n;
            a.n_experts = c.n_experts;
            a.top_k = c.n_experts_per_token;
            a.order = sigmoid ? kc::RouterOrder::kSigmoid : kc::RouterOrder::kSoftmaxThenTopK;
            a.norm_topk_prob = norm;
            a.norm_epsilon = c.topk_norm_epsilon;
            a.choice_bias = bias ? d_bias.get() : nullptr;
            a.n_group = c.n_group;
            a.topk_group = c.topk_group;
            a.group_top2_sum = top2;
            a.routed_scale = static_cast<float>(c.routed_scaling_factor);
            a.ids = d_ids.get();
            a.weights = d_w.get();
            kc::router_topk(a, nullptr);
            sync_and_check();
            INFO("experts " << c.n_experts << " k " << c.n_experts_per_token << " groups "
                            << c.n_group << "/" << c.topk_group << " sigmoid " << sigmoid
                            << " bias " << bias << " top2 " << top2 << " norm " << norm);
            REQUIRE(d_ids.download() == want.expert_ids);
            const std::vector<float> got_w = d_w.download();
            for (size_t i = 0; i < got_w.size(); ++i) {
              worst = std::fmax(worst, std::fabs(got_w[i] - want.weights[i]));
            }
          }
        }
      }
    }
  }
  CHECK(worst < 1e-5);
  MESSAGE("parity sigmoid / grouped router: ids identical, max weight difference " << worst);
}

struct MoeCase {
  int64_t n_tokens, n_experts, top_k, hidden, inter;
  bool gemm;
  bool direct = false;   // ungrouped decode path (one token)
  bool gpt_oss = false;  // expert biases and the clamped SwiGLU
};

// One MoE layer on the device against the scalar reference; returns the
// normalised error of the residual stream after the combine.
double run_moe_case(const MoeCase& c, std::mt19937& rng) {
  const kernels::CpuKernels& ref = *kernels::cpu_kernels_for(kernels::CpuLevel::kScalar);
  const int64_t H = c.hidden, I = c.inter, E = c.n_experts, n = c.n_tokens, k = c.top_k;
  // Experts in use: every third one is never chosen; every fifth is absent (null).
  std::vector<int32_t> usable;
  for (int32_t e = 0; e < E; ++e) {
    if (e % 3 != 1) usable.push_back(e);
  }
  REQUIRE(static_cast<int64_t>(usable.size()) >= k);
  std::vector<int32_t> ids(n * k);
  std::vector<float> weights(n * k);
  for (int64_t t = 0; t < n; ++t) {
    std::vector<int32_t> pick = usable;
    std::shuffle(pick.begin(), pick.end(), rng);
    for (int64_t j = 0; j < k; ++j) {
      ids[t * k + j] = pick[j];
      weights[t * k + j] = std::uniform_real_distribution<float>(0.05f, 1.0f)(rng);
    }
  }
  std::vector<std::vector<uint16_t>> gate(E), up(E), down(E);
  std::vector<DeviceArray<uint16_t>> d_gate, d_up, d_down;
  std::vector<const uint16_t*> p_gate(E), p_up(E), p_down(E);
  std::vector<std::vector<float>> gate_b(E), up_b(E), down_b(E);
  std::vector<DeviceArray<float>> d_gate_b, d_up_b, d_down_b;
  std::vector<const float*> p_gate_b(E), p_up_b(E), p_down_b(E);
  const float alpha = 1.702f, limit = 7.0f;
  for (int64_t e = 0; e < E; ++e) {
    gate_b[e] = random_floats(rng, I, -2.0f, 2.0f);
    up_b[e] = random_floats(rng, I, -2.0f, 2.0f);
    down_b[e] = random_floats(rng, H, -2.0f, 2.0f);
    d_gate_b.emplace_back(gate_b[e]);
    d_up_b.emplace_back(up_b[e]);
    d_down_b.emplace_back(down_b[e]);
    p_gate_b[e] = d_gate_b.back().get();
    p_up_b[e] = d_up_b.back().get();
    // Every fourth expert has no down bias (a null entry).
    p_down_b[e] = e % 4 == 3 ? nullptr : d_down_b.back().get();
  }
  for (int64_t e = 0; e < E; ++e) {
    gate[e] = to_bf16(random_floats(rng, I * H));
    up[e] = to_bf16(random_floats(rng, I * H));
    down[e] = to_bf16(random_floats(rng, H * I));
    d_gate.emplace_back(gate[e]);
    d_up.emplace_back(up[e]);
    d_down.emplace_back(down[e]);
    const bool absent = e % 5 == 4;
    p_gate[e] = absent ? nullptr : d_gate.back().get();
    p_up[e] = absent ? nullptr : d_up.back().get();
    p_down[e] = absent ? nullptr : d_down.back().get();
  }
  const int64_t x_stride = H % 8 == 0 ? H + 8 : H;
  const std::vector<uint16_t> x = to_bf16(random_floats(rng, n * x_stride));
  const std::vector<float> out0 = random_floats(rng, n * H);

  // Reference.
  std::vector<float> want = out0;
  std::vector<float> g(I), u(I), hf(I), d(H);
  std::vector<uint16_t> hb(I);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = ids[t * k + j];
      if (e % 5 == 4) continue;
      kernels::MatmulArgs m{
          {gate[e].data(), kernels::WeightType::kBF16, I, H}, 1, g.data(), I, 0, I};
      ref.matmul_bf16(m, x.data() + t * x_stride);
      m.w.data = up[e].data();
      m.y = u.data();
      ref.matmul_bf16(m, x.data() + t * x_stride);
      if (c.gpt_oss) {
        ref.axpy(1.0f, gate_b[e].data(), g.data(), I);
        ref.axpy(1.0f, up_b[e].data(), u.data(), I);
        ref.swiglu_clamped(g.data(), u.data(), I, alpha, limit, hf.data());
      } else {
        ref.swiglu(g.data(), u.data(), I, hf.data());
      }
      ref.f32_to_bf16(hf.data(), I, hb.data());
      kernels::MatmulArgs md{
          {down[e].data(), kernels::WeightType::kBF16, H, I}, 1, d.data(), H, 0, H};
      ref.matmul_bf16(md, hb.data());
      if (c.gpt_oss && e % 4 != 3) ref.axpy(1.0f, down_b[e].data(), d.data(), H);
      ref.axpy(weights[t * k + j], d.data(), want.data() + t * H, H);
    }
  }

  // Device.
  const int64_t P = n * k;
  DeviceArray<int32_t> d_ids(ids), d_offsets(E + 1), d_token(P), d_group(P), d_pos(P);
  DeviceArray<float> d_weights(weights), d_pair_w(P);
  const int64_t max_tiles = kc::max_expert_tiles(P, E);
  DeviceArray<int32_t> d_tile_group(max_tiles), d_tile_row0(max_tiles), d_n_tiles(1);
  DeviceArray<const uint16_t*> dp_gate(p_gate), dp_up(p_up), dp_down(p_down);
  DeviceArray<const float*> dp_gate_b(p_gate_b), dp_up_b(p_up_b), dp_down_b(p_down_b);
  DeviceArray<uint16_t> d_x(x), d_h(P * I);
  DeviceArray<float> d_d(P * H), d_out(out0);
  d_d.fill_bytes(0);
  kc::GroupArgs ga;
  ga.ids = d_ids.get();
  ga.weights = d_weights.get();
  ga.n_pairs = P;
  ga.top_k = k;
  ga.n_groups = E;
  ga.group_offsets = d_offsets.get();
  ga.pair_token = d_token.get();
  ga.pair_weight = d_pair_w.get();
  ga.pair_group = d_group.get();
  ga.pair_pos = d_pos.get();
  ga.tile_group = d_tile_group.get();
  ga.tile_row0 = d_tile_row0.get();
  ga.n_tiles = d_n_tiles.get();
  kc::group_pairs(ga, nullptr);
  kc::ExpertFfnArgs fa;
  fa.gate = dp_gate.get();
  fa.up = dp_up.get();
  fa.down = dp_down.get();
  fa.n_groups = E;
  fa.hidden = H;
  fa.inter = I;
  fa.group_offsets = d_offsets.get();
  fa.pair_token = d_token.get();
  fa.pair_group = d_group.get();
  fa.tile_group = d_tile_group.get();
  fa.tile_row0 = d_tile_row0.get();
  fa.n_tiles = d_n_tiles.get();
  fa.max_pairs = P;
  fa.x = d_x.get();
  fa.x_stride = x_stride;
  fa.h = d_h.get();
  fa.d = d_d.get();
  if (c.gpt_oss) {
    fa.gate_bias = dp_gate_b.get();
    fa.up_bias = dp_up_b.get();
    fa.down_bias = dp_down_b.get();
    fa.clamped = true;
    fa.alpha = alpha;
    fa.limit = limit;
  }
  if (c.direct) {
    fa.direct = true;
    fa.direct_ids = d_ids.get();
    fa.direct_top_k = k;
  }
  if (c.gemm) {
    REQUIRE(kc::expert_gemm_supported(fa));
    kc::expert_gate_up_gemm(fa, nullptr);
    kc::expert_down_gemm(fa, nullptr);
  } else {
    kc::expert_gate_up_gemv(fa, nullptr);
    kc::expert_down_gemv(fa, nullptr);
  }
  // Absent experts' rows of d stay zero (the buffer was cleared) and their
  // weights are zeroed, as a caller that runs them elsewhere does.
  std::vector<float> combine_w = weights;
  for (int64_t i = 0; i < P; ++i) {
    if (ids[i] % 5 == 4) combine_w[i] = 0.0f;
  }
  DeviceArray<float> d_cw(combine_w);
  kc::CombineArgs ca;
  ca.d = d_d.get();
  ca.hidden = H;
  ca.pos = c.direct ? nullptr : d_pos.get();
  ca.weights = d_cw.get();
  ca.n_tokens = n;
  ca.top_k = k;
  ca.out = d_out.get();
  ca.out_stride = H;
  kc::moe_combine(ca, nullptr);
  sync_and_check();

  // Grouping invariants.
  const std::vector<int32_t> offsets = d_offsets.download();
  const std::vector<int32_t> pos = d_pos.download();
  const std::vector<int32_t> token = d_token.download();
  int64_t expected_tiles = 0;
  for (int64_t e = 0; e < E; ++e) {
    const int64_t count = std::count(ids.begin(), ids.end(), static_cast<int32_t>(e));
    REQUIRE(offsets[e + 1] - offsets[e] == count);
    expected_tiles += (count + kc::kExpertTileRows - 1) / kc::kExpertTileRows;
  }
  REQUIRE(d_n_tiles.download()[0] == expected_tiles);
  for (int64_t i = 0; i < P; ++i) {
    REQUIRE(token[pos[i]] == i / k);
    REQUIRE(pos[i] >= offsets[ids[i]]);
    REQUIRE(pos[i] < offsets[ids[i] + 1]);
  }
  return normalised_error(d_out.download(), want);
}

TEST_CASE("cuda parity: grouped expert FFN and combine, GEMV and GEMM paths") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(42);
  const MoeCase cases[] = {
      // decode-sized (GEMV)
      {1, 8, 1, 64, 32, false},
      {1, 8, 2, 64, 32, false},
      {1, 32, 8, 1024, 512, false},
      {3, 33, 8, 40, 24, false},
      {4, 8, 4, 33, 17, false},
      {7, 16, 5, 256, 96, false},
      // prefill-sized (tensor cores)
      {17, 8, 2, 64, 32, true},
      {130, 33, 8, 40, 24, true},
      {64, 32, 8, 1024, 512, true},
      {9, 16, 1, 256, 96, true},
      {200, 12, 6, 128, 200, true},
      {5, 8, 3, 2048, 64, true},
      // GEMV at prefill sizes (odd widths fall back to it)
      {33, 8, 2, 33, 17, false},
      // one decode token, ungrouped
      {1, 32, 8, 1024, 512, false, true},
      {1, 64, 8, 2048, 1024, false, true},
      {1, 8, 2, 33, 17, false, true},
      {1, 16, 1, 64, 40, false, true},
      // gpt-oss experts: biases and the clamped SwiGLU, every path
      {1, 8, 2, 64, 32, false, true, true},
      {7, 16, 4, 256, 96, false, false, true},
      {130, 33, 8, 40, 24, true, false, true},
      {64, 32, 4, 1024, 512, true, false, true},
  };
  double worst_gemv = 0.0, worst_gemm = 0.0;
  for (const MoeCase& c : cases) {
    const double err = run_moe_case(c, rng);
    CHECK_MESSAGE(err < 2e-3, "tokens " << c.n_tokens << " experts " << c.n_experts << " top-"
                                        << c.top_k << " hidden " << c.hidden << " inter " << c.inter
                                        << (c.gemm ? " gemm" : " gemv")
                                        << (c.gpt_oss ? " gpt-oss" : "") << ": " << err);
    (c.gemm ? worst_gemm : worst_gemv) = std::fmax(c.gemm ? worst_gemm : worst_gemv, err);
  }
  MESSAGE("parity expert FFN + combine: gemv " << worst_gemv << ", gemm " << worst_gemm);
}

TEST_CASE("cuda parity: combine with per-token entry lists adds in entry order") {
  DMOE_REQUIRE_CUDA();
  std::mt19937 rng(43);
  const int64_t H = 37, n = 4;
  const std::vector<int32_t> start = {0, 2, 2, 5, 6};  // token 1 has no entries
  const std::vector<int32_t> pos = {3, 0, 1, 4, 2, 5};
  const std::vector<float> w = random_floats(rng, 6, 0.1f, 1.0f);
  const std::vector<float> d = random_floats(rng, 6 * H);
  const std::vector<float> out0 = random_floats(rng, n * H);
  std::vector<float> want = out0;
  for (int64_t t = 0; t < n; ++t) {
    for (int32_t e = start[t]; e < start[t + 1]; ++e) {
      for (int64_t c = 0; c < H; ++c)
        want[t * H + c] = std::fma(w[e], d[pos[e] * H + c], want[t * H + c]);
    }
  }
  DeviceArray<int32_t> d_start(start), d_pos(pos);
  DeviceArray<float> d_w(w), d_d(d), d_out(out0);
  kc::CombineArgs ca;
  ca.d = d_d.get();
  ca.hidden = H;
  ca.pos = d_pos.get();
  ca.weights = d_w.get();
  ca.token_start = d_start.get();
  ca.n_tokens = n;
  ca.out = d_out.get();
  ca.out_stride = H;
  kc::moe_combine(ca, nullptr);
  sync_and_check();
  CHECK(normalised_error(d_out.download(), want) < 1e-6);
}

}  // namespace
}  // namespace dancemoe::testing
