// Expert FFN kernels on the GPU against cuBLAS, on one layer of experts at
// a time, for the medium preset's expert shape (hidden 1024, inter 512, 32
// experts, top-8) and an OLMoE-1B-7B expert (hidden 2048, inter 1024, 64
// experts, top-8):
//
//   decode (batch 1): the expert GEMV kernels (gate/up + SwiGLU, down) over
//     the token's 8 experts -- as the decode step runs them (the router's
//     top-k used directly) and through the grouping launch -- as achieved weight-read bandwidth in
//     GB/s and in % of the device's peak memory bandwidth (target >= 70 %); the same expert GEMMs
//     through cuBLAS (cublasGemmBatchedEx, 16 gate/up products, a SwiGLU, 8 down products) as the
//     reference.
//   prefill (128 tokens, routed evenly: every expert gets 128 * 8 / E
//     tokens): the tensor-core grouped GEMM kernels against the same cuBLAS
//     batched GEMMs, in TFLOP/s.
//
// Weights are spread over enough layers (>= 1 GiB) that a step's experts
// are not in L2 from an earlier step; each step uses the next layer and a
// different random top-8. Timing: CUDA events over 200 steps after 20
// warm-up steps, best of 3.
//
//   build/cuda/tests/bench_cuda_experts
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/expert_ffn.cuh"
#include "kernels/cuda/moe_group.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace kc = dancemoe::kernels::cuda;

namespace {

#define CUDA_OK(expr)                                                                             \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)
#define CUBLAS_OK(expr)                                                                \
  do {                                                                                 \
    cublasStatus_t s_ = (expr);                                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #expr, \
                   static_cast<int>(s_));                                              \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

template <class T>
T* device_alloc(size_t n) {
  T* p = nullptr;
  CUDA_OK(cudaMalloc(&p, n * sizeof(T)));
  return p;
}

template <class T>
T* device_copy(const std::vector<T>& v) {
  T* p = device_alloc<T>(v.size());
  CUDA_OK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

struct Shape {
  const char* name;
  int64_t hidden, inter, n_experts, top_k;
};

// Every expert of `n_layers` layers, and per-layer device pointer tables.
struct ExpertPool {
  int64_t n_layers = 0;
  uint16_t* weights = nullptr;
  std::vector<const uint16_t**> gate, up, down;                    // per layer, device tables [E]
  std::vector<std::vector<const uint16_t*>> h_gate, h_up, h_down;  // host copies
};

ExpertPool make_pool(const Shape& s) {
  ExpertPool p;
  const uint64_t matrix = static_cast<uint64_t>(s.inter * s.hidden);
  const uint64_t per_layer = 3 * matrix * s.n_experts * 2;
  p.n_layers = std::max<int64_t>(4, static_cast<int64_t>((uint64_t{1} << 30) / per_layer) + 1);
  const uint64_t total = per_layer / 2 * p.n_layers;  // elements
  p.weights = device_alloc<uint16_t>(total);
  // 0x3c3c: bf16 0.0115 -- any finite value will do for timing.
  CUDA_OK(cudaMemset(p.weights, 0x3c, total * 2));
  for (int64_t l = 0; l < p.n_layers; ++l) {
    std::vector<const uint16_t*> g(s.n_experts), u(s.n_experts), d(s.n_experts);
    for (int64_t e = 0; e < s.n_experts; ++e) {
      const uint16_t* base = p.weights + (l * s.n_experts + e) * 3 * matrix;
      g[e] = base;
      u[e] = base + matrix;
      d[e] = base + 2 * matrix;
    }
    p.gate.push_back(const_cast<const uint16_t**>(device_copy(g)));
    p.up.push_back(const_cast<const uint16_t**>(device_copy(u)));
    p.down.push_back(const_cast<const uint16_t**>(device_copy(d)));
    p.h_gate.push_back(g);
    p.h_up.push_back(u);
    p.h_down.push_back(d);
  }
  return p;
}

// Best of 3 runs of `steps` calls of step(i), in milliseconds per step.
template <class F>
double time_steps(int steps, F step) {
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  for (int i = 0; i < 20; ++i) step(i);
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    CUDA_OK(cudaEventRecord(a));
    for (int i = 0; i < steps; ++i) step(i);
    CUDA_OK(cudaEventRecord(b));
    CUDA_OK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    best = std::min(best, static_cast<double>(ms) / steps);
  }
  CUDA_OK(cudaGetLastError());
  return best;
}

// Routing of `n_tokens` tokens per step: random distinct top-k (decode), or
// every expert exactly n_tokens * k / E tokens (prefill).
std::vector<int32_t> routing(const Shape& s, int64_t n_tokens, int steps, bool even,
                             std::mt19937& rng) {
  std::vector<int32_t> ids(static_cast<size_t>(steps * n_tokens * s.top_k));
  std::vector<int32_t> order(static_cast<size_t>(s.n_experts));
  for (int st = 0; st < steps; ++st) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::iota(order.begin(), order.end(), 0);
      if (even) {
        std::rotate(order.begin(), order.begin() + (t * s.top_k) % s.n_experts, order.end());
      } else {
        std::shuffle(order.begin(), order.end(), rng);
      }
      for (int64_t k = 0; k < s.top_k; ++k) {
        ids[static_cast<size_t>((st * n_tokens + t) * s.top_k + k)] = order[static_cast<size_t>(k)];
      }
    }
  }
  return ids;
}

struct Workspace {
  int32_t *offsets, *pair_token, *pair_group, *pair_pos, *tile_group, *tile_row0, *n_tiles;
  float* pair_weight;
  uint16_t *x, *h;
  float *d, *gate_up_out;
};

Workspace make_workspace(const Shape& s, int64_t n_tokens) {
  const int64_t P = n_tokens * s.top_k;
  const int64_t T = kc::max_expert_tiles(P, s.n_experts);
  Workspace w;
  w.offsets = device_alloc<int32_t>(s.n_experts + 1);
  w.pair_token = device_alloc<int32_t>(P);
  w.pair_group = device_alloc<int32_t>(P);
  w.pair_pos = device_alloc<int32_t>(P);
  w.pair_weight = device_alloc<float>(P);
  w.tile_group = device_alloc<int32_t>(T);
  w.tile_row0 = device_alloc<int32_t>(T);
  w.n_tiles = device_alloc<int32_t>(1);
  w.x = device_alloc<uint16_t>(n_tokens * s.hidden);
  CUDA_OK(cudaMemset(w.x, 0x3c, n_tokens * s.hidden * 2));
  w.h = device_alloc<uint16_t>(P * s.inter);
  w.d = device_alloc<float>(P * s.hidden);
  w.gate_up_out = device_alloc<float>(2 * P * s.inter);
  return w;
}

kc::GroupArgs group_args(const Shape& s, const Workspace& w, const int32_t* ids, int64_t n_tokens) {
  kc::GroupArgs g;
  g.ids = ids;
  g.n_pairs = n_tokens * s.top_k;
  g.top_k = s.top_k;
  g.n_groups = s.n_experts;
  g.group_offsets = w.offsets;
  g.pair_token = w.pair_token;
  g.pair_weight = w.pair_weight;
  g.pair_group = w.pair_group;
  g.pair_pos = w.pair_pos;
  g.tile_group = w.tile_group;
  g.tile_row0 = w.tile_row0;
  g.n_tiles = w.n_tiles;
  return g;
}

kc::ExpertFfnArgs ffn_args(const Shape& s, const ExpertPool& pool, int64_t layer,
                           const Workspace& w, int64_t n_tokens) {
  kc::ExpertFfnArgs f;
  f.gate = pool.gate[static_cast<size_t>(layer)];
  f.up = pool.up[static_cast<size_t>(layer)];
  f.down = pool.down[static_cast<size_t>(layer)];
  f.n_groups = s.n_experts;
  f.hidden = s.hidden;
  f.inter = s.inter;
  f.group_offsets = w.offsets;
  f.pair_token = w.pair_token;
  f.pair_group = w.pair_group;
  f.tile_group = w.tile_group;
  f.tile_row0 = w.tile_row0;
  f.n_tiles = w.n_tiles;
  f.max_pairs = n_tokens * s.top_k;
  f.x = w.x;
  f.x_stride = s.hidden;
  f.h = w.h;
  f.d = w.d;
  return f;
}

// cuBLAS reference for one step: batched GEMMs over the step's (expert,
// token block) problems. Pointer arrays are prepared per step beforehand.
struct CublasStep {
  const void** gu_a;  // [2 * n_problems] gate then up weights
  const void** gu_b;  // activations
  void** gu_c;        // f32 outputs
  const void** dn_a;
  const void** dn_b;
  void** dn_c;
  int n_problems;
};

void run(const Shape& s, const kc::DeviceInfo& info, cublasHandle_t blas) {
  std::mt19937 rng(1234);
  const ExpertPool pool = make_pool(s);
  const int steps = 200;
  const uint64_t expert_bytes = static_cast<uint64_t>(3 * s.inter * s.hidden * 2);
  const double peak = info.peak_bandwidth_bytes_per_s;

  // ---- decode, batch 1 ----
  {
    const int64_t n = 1;
    const std::vector<int32_t> ids = routing(s, n, steps, false, rng);
    int32_t* d_ids = device_copy(ids);
    Workspace w = make_workspace(s, n);
    auto layer_of = [&](int i) { return static_cast<int64_t>(i % pool.n_layers); };
    // The decode path: the router's top-k used as it is (no grouping launch).
    const double ms_direct = time_steps(steps, [&](int i) {
      kc::ExpertFfnArgs f = ffn_args(s, pool, layer_of(i), w, n);
      f.direct = true;
      f.direct_ids = d_ids + (i % steps) * s.top_k;
      f.direct_top_k = s.top_k;
      kc::expert_gate_up_gemv(f, nullptr);
      kc::expert_down_gemv(f, nullptr);
    });
    // The grouped path (batches of a few tokens): grouping launch included.
    const double ms_grouped = time_steps(steps, [&](int i) {
      kc::group_pairs(group_args(s, w, d_ids + (i % steps) * s.top_k, n), nullptr);
      kc::ExpertFfnArgs f = ffn_args(s, pool, layer_of(i), w, n);
      kc::expert_gate_up_gemv(f, nullptr);
      kc::expert_down_gemv(f, nullptr);
    });
    // cuBLAS: 16 gate/up GEMVs (one batched call), SwiGLU, 8 down GEMVs.
    std::vector<CublasStep> cs(steps);
    for (int i = 0; i < steps; ++i) {
      const int64_t l = layer_of(i);
      std::vector<const void*> gua(16), gub(16), dna(8), dnb(8);
      std::vector<void*> guc(16), dnc(8);
      for (int k = 0; k < 8; ++k) {
        const int32_t e = ids[static_cast<size_t>(i * s.top_k + k)];
        gua[k] = pool.h_gate[l][e];
        gua[8 + k] = pool.h_up[l][e];
        gub[k] = gub[8 + k] = w.x;
        guc[k] = w.gate_up_out + k * s.inter;
        guc[8 + k] = w.gate_up_out + (8 + k) * s.inter;
        dna[k] = pool.h_down[l][e];
        dnb[k] = w.h + k * s.inter;
        dnc[k] = w.d + k * s.hidden;
      }
      cs[i] = {const_cast<const void**>(device_copy(gua)),
               const_cast<const void**>(device_copy(gub)),
               device_copy(guc),
               const_cast<const void**>(device_copy(dna)),
               const_cast<const void**>(device_copy(dnb)),
               device_copy(dnc),
               8};
    }
    const float one = 1.0f, zero = 0.0f;
    const double ms_blas = time_steps(steps, [&](int i) {
      const CublasStep& c = cs[static_cast<size_t>(i % steps)];
      CUBLAS_OK(cublasGemmBatchedEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, s.inter, 1, s.hidden, &one,
                                    c.gu_a, CUDA_R_16BF, s.hidden, c.gu_b, CUDA_R_16BF, s.hidden,
                                    &zero, c.gu_c, CUDA_R_32F, s.inter, 16, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
      kc::swiglu(w.gate_up_out, w.gate_up_out + 8 * s.inter, 8 * s.inter, nullptr, w.h, nullptr);
      CUBLAS_OK(cublasGemmBatchedEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, s.hidden, 1, s.inter, &one,
                                    c.dn_a, CUDA_R_16BF, s.inter, c.dn_b, CUDA_R_16BF, s.inter,
                                    &zero, c.dn_c, CUDA_R_32F, s.hidden, 8, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
    });
    const double bytes = static_cast<double>(s.top_k * expert_bytes);
    auto report = [&](const char* what, double ms) {
      const double gbs = bytes / (ms * 1e-3) / 1e9;
      std::printf("  %-40s %8.2f us  %8.1f GB/s  %5.1f %% of peak\n", what, ms * 1e3, gbs,
                  100.0 * gbs * 1e9 / peak);
    };
    std::printf("%s: decode, batch 1, top-%lld of %lld experts (%.1f MB of weights per step)\n",
                s.name, static_cast<long long>(s.top_k), static_cast<long long>(s.n_experts),
                bytes / 1e6);
    report("expert GEMV, decode path (gate/up + down)", ms_direct);
    report("grouped GEMV (group + gate/up + down)", ms_grouped);
    report("cuBLAS batched GEMV + SwiGLU", ms_blas);
  }

  // ---- prefill, 128 tokens routed evenly ----
  {
    const int64_t n = 128;
    const int64_t per_expert = n * s.top_k / s.n_experts;
    const std::vector<int32_t> ids = routing(s, n, 1, true, rng);
    int32_t* d_ids = device_copy(ids);
    Workspace w = make_workspace(s, n);
    kc::group_pairs(group_args(s, w, d_ids, n), nullptr);
    auto layer_of = [&](int i) { return static_cast<int64_t>(i % pool.n_layers); };
    const double ms_ours = time_steps(50, [&](int i) {
      kc::ExpertFfnArgs f = ffn_args(s, pool, layer_of(i), w, n);
      kc::expert_gate_up_gemm(f, nullptr);
      kc::expert_down_gemm(f, nullptr);
    });
    // cuBLAS: per expert, its per_expert tokens as one contiguous block of x.
    std::vector<CublasStep> cs(static_cast<size_t>(pool.n_layers));
    for (int64_t l = 0; l < pool.n_layers; ++l) {
      const int64_t E = s.n_experts;
      std::vector<const void*> gua(2 * E), gub(2 * E), dna(E), dnb(E);
      std::vector<void*> guc(2 * E), dnc(E);
      for (int64_t e = 0; e < E; ++e) {
        gua[e] = pool.h_gate[l][e];
        gua[E + e] = pool.h_up[l][e];
        gub[e] = gub[E + e] = w.x + (e * per_expert % n) * s.hidden;
        guc[e] = w.gate_up_out + e * per_expert * s.inter;
        guc[E + e] = w.gate_up_out + (E + e) * per_expert * s.inter;
        dna[e] = pool.h_down[l][e];
        dnb[e] = w.h + e * per_expert * s.inter;
        dnc[e] = w.d + e * per_expert * s.hidden;
      }
      cs[static_cast<size_t>(l)] = {const_cast<const void**>(device_copy(gua)),
                                    const_cast<const void**>(device_copy(gub)),
                                    device_copy(guc),
                                    const_cast<const void**>(device_copy(dna)),
                                    const_cast<const void**>(device_copy(dnb)),
                                    device_copy(dnc),
                                    static_cast<int>(E)};
    }
    const float one = 1.0f, zero = 0.0f;
    const int64_t P = n * s.top_k;
    const double ms_blas = time_steps(50, [&](int i) {
      const CublasStep& c = cs[static_cast<size_t>(layer_of(i))];
      CUBLAS_OK(cublasGemmBatchedEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, s.inter, per_expert, s.hidden,
                                    &one, c.gu_a, CUDA_R_16BF, s.hidden, c.gu_b, CUDA_R_16BF,
                                    s.hidden, &zero, c.gu_c, CUDA_R_32F, s.inter, 2 * c.n_problems,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      kc::swiglu(w.gate_up_out, w.gate_up_out + P * s.inter, P * s.inter, nullptr, w.h, nullptr);
      CUBLAS_OK(cublasGemmBatchedEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, s.hidden, per_expert, s.inter,
                                    &one, c.dn_a, CUDA_R_16BF, s.inter, c.dn_b, CUDA_R_16BF,
                                    s.inter, &zero, c.dn_c, CUDA_R_32F, s.hidden, c.n_problems,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    const double flops = 2.0 * 3 * static_cast<double>(P) * s.inter * s.hidden;
    const double bytes = static_cast<double>(s.n_experts * expert_bytes);
    auto report = [&](const char* what, double ms) {
      std::printf("  %-40s %8.2f us  %8.1f TFLOP/s  %8.1f GB/s weights\n", what, ms * 1e3,
                  flops / (ms * 1e-3) / 1e12, bytes / (ms * 1e-3) / 1e9);
    };
    std::printf("%s: prefill, %lld tokens x top-%lld = %lld tokens per expert, all %lld experts\n",
                s.name, static_cast<long long>(n), static_cast<long long>(s.top_k),
                static_cast<long long>(per_expert), static_cast<long long>(s.n_experts));
    report("grouped tensor-core GEMM (gate/up + down)", ms_ours);
    report("cuBLAS batched GEMM + SwiGLU", ms_blas);
  }
  CUDA_OK(cudaFree(pool.weights));
}

}  // namespace

int main() {
  std::string why;
  if (kc::device_count(&why) == 0) {
    std::printf("no CUDA device: %s\n", why.c_str());
    return 0;
  }
  kc::DeviceInfo info;
  if (!kc::device_info(0, &info, &why)) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  std::printf("GPU: %s (cc %d.%d, %d SMs, %.1f GiB), peak memory bandwidth %.0f GB/s\n\n",
              info.name.c_str(), info.compute_major, info.compute_minor, info.n_multiprocessors,
              static_cast<double>(info.total_bytes) / (1ull << 30),
              info.peak_bandwidth_bytes_per_s / 1e9);
  cublasHandle_t blas;
  CUBLAS_OK(cublasCreate(&blas));
  const Shape shapes[] = {{"medium expert (hidden 1024, inter 512)", 1024, 512, 32, 8},
                          {"OLMoE-1B-7B expert (hidden 2048, inter 1024)", 2048, 1024, 64, 8}};
  for (const Shape& s : shapes) {
    run(s, info, blas);
    std::printf("\n");
  }
  cublasDestroy(blas);
  return 0;
}
