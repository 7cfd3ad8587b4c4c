// Kernel benchmark: for every CPU level this machine has, decode GEMV
// bandwidth (weights cycled through a pool far larger than the last-level
// cache, so they come from DRAM as in a real model), prefill GEMM throughput,
// and the streaming-read bandwidth the GEMV is measured against.
//
// Shapes are the "medium" preset: hidden 1024, attention q/o
// 1024x1024, k/v 512x1024, expert gate/up 512x1024 and down 1024x512, router
// 32x1024, lm_head 32000x1024; bf16 weights [out_features, in_features].
//
// Timing is built for a shared machine: the variants of one table (levels,
// ops, the plain read) are timed interleaved, in batches of ~1 ms (shorter
// than a scheduler time slice), round after round, and each keeps its fastest batch. A burst of
// load from another process then costs every variant a batch or two instead of skewing one.
//
// A section `experts` times bf16 expert matrices of the medium and small
// presets in the rows layout and interleaved by 16 rows (kernels/interleave.h)
// with this machine's matmul_bf16, at the token counts an expert sees in a
// decode step (1), a batched step (2-16) and a prefill (64).
//
// usage: bench_kernels [--seconds S] [--pool-mib M] [--no-scalar]
//                      [--only gemv|gemm|ops|experts]
// Build in Release (-DCMAKE_BUILD_TYPE=Release).
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "kernels/cpu/memory_bandwidth.h"
#include "kernels/cpu/numeric.h"
#include "kernels/interleave.h"
#include "kernels/kernels.h"
#include "tests/bench/interleaved_timer.h"

namespace dancemoe::kernels {
namespace {

using bench::Variant;

struct Options {
  double seconds = 0.4;    // timed per variant, over all its batches
  int64_t pool_mib = 512;  // weights cycled through, >> L3
  bool scalar = true;
  std::string only;  // "", "gemv", "gemm", "ops" or "experts": run one section
};

void time_interleaved(std::vector<Variant>* variants, const Options& opts) {
  bench::time_interleaved(variants, opts.seconds);
}

struct Shape {
  const char* name;
  int64_t rows;
  int64_t cols;
};

const Shape kGemvShapes[] = {
    {"attn q/o 1024x1024", 1024, 1024},     {"attn k/v 512x1024", 512, 1024},
    {"expert gate/up 512x1024", 512, 1024}, {"expert down 1024x512", 1024, 512},
    {"router 32x1024", 32, 1024},           {"lm_head 32000x1024", 32000, 1024}};
const Shape kGemmShapes[] = {{"attn q/o 1024x1024", 1024, 1024},
                             {"expert gate/up 512x1024", 512, 1024},
                             {"expert down 1024x512", 1024, 512}};
const int64_t kGemmTokens[] = {4, 8, 32, 128};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Copies of one bf16 weight matrix filling about pool_bytes, each copy
// starting on its own cache line. Values are finite, varied bf16 numbers.
// `layout`: each copy interleaved by 16 rows (kernels/interleave.h) or not.
class WeightPool {
 public:
  WeightPool(const Shape& shape, int64_t pool_bytes, WeightLayout layout = WeightLayout::kRows)
      : shape_(shape), layout_(layout) {
    const int64_t matrix_bytes = shape.rows * shape.cols * 2;
    copy_stride_bytes_ = (matrix_bytes + 255) / 256 * 256;
    n_copies_ = std::max<int64_t>(1, pool_bytes / copy_stride_bytes_);
    const int64_t huge = int64_t{2} << 20;
    const int64_t total = (copy_stride_bytes_ * n_copies_ + huge - 1) / huge * huge;
    data_.reset(static_cast<char*>(std::aligned_alloc(huge, static_cast<size_t>(total))));
#if defined(MADV_HUGEPAGE)
    madvise(data_.get(), static_cast<size_t>(total), MADV_HUGEPAGE);
#endif
    auto* words = reinterpret_cast<uint16_t*>(data_.get());
    uint32_t state = 12345;
    for (int64_t i = 0; i < total / 2; ++i) {
      state = state * 1664525u + 1013904223u;
      // Sign, exponent 2^-8..2^-1, 7 mantissa bits from the generator.
      words[i] = static_cast<uint16_t>((state >> 31) << 15 | (119 + (state >> 24) % 8) << 7 |
                                       ((state >> 16) & 0x7f));
    }
    if (layout == WeightLayout::kInterleaved16) {
      std::vector<char> rows(static_cast<size_t>(matrix_bytes));
      for (int64_t c = 0; c < n_copies_; ++c) {
        char* at = data_.get() + c * copy_stride_bytes_;
        std::copy(at, at + matrix_bytes, rows.begin());
        interleave_matrix(WeightType::kBF16, rows.data(), shape.rows, shape.cols, at);
      }
    }
  }
  WeightView copy(int64_t i) const {
    return WeightView{data_.get() + (i % n_copies_) * copy_stride_bytes_, WeightType::kBF16,
                      shape_.rows, shape_.cols, layout_};
  }
  const Shape& shape() const { return shape_; }

 private:
  Shape shape_;
  WeightLayout layout_;
  int64_t copy_stride_bytes_ = 0;
  int64_t n_copies_ = 0;
  std::unique_ptr<char, FreeDeleter> data_;
};

enum class Op { kMatmulF32, kMatmulBf16 };
const char* op_name(Op op) { return op == Op::kMatmulF32 ? "matmul_f32" : "matmul_bf16"; }

// Activations for n_tokens tokens in both forms; y sized for the shape.
struct Activations {
  Activations(const Shape& shape, int64_t n) : n_tokens(n) {
    x.resize(static_cast<size_t>(n * shape.cols));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
    x_bf16.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) x_bf16[i] = float_to_bf16(x[i]);
    y.resize(static_cast<size_t>(n * shape.rows));
  }
  int64_t n_tokens;
  std::vector<float> x;
  std::vector<uint16_t> x_bf16;
  std::vector<float> y;
};

std::function<void(int64_t)> matmul_call(const CpuKernels& k, Op op, const WeightPool& pool,
                                         Activations* act, int64_t row_begin, int64_t row_end) {
  return [&k, op, &pool, act, row_begin, row_end](int64_t i) {
    MatmulArgs args;
    args.w = pool.copy(i);
    args.n_tokens = act->n_tokens;
    args.y = act->y.data();
    args.y_stride = args.w.rows;
    args.row_begin = row_begin;
    args.row_end = row_end;
    if (op == Op::kMatmulF32) {
      k.matmul_f32(args, act->x.data());
    } else {
      k.matmul_bf16(args, act->x_bf16.data());
    }
  };
}

// The caller and one worker thread each run half of the rows of a call; a
// barrier starts and ends each call, as a thread pool would.
class TwoThreadGemv {
 public:
  TwoThreadGemv(const CpuKernels& k, const WeightPool& pool, Activations* act)
      : sync_(2), worker_([this] { work(); }) {
    const int64_t rows = pool.shape().rows;
    const int64_t mid = rows / 2;
    first_ = matmul_call(k, Op::kMatmulBf16, pool, act, 0, mid);
    second_ = matmul_call(k, Op::kMatmulBf16, pool, act, mid, rows);
  }
  ~TwoThreadGemv() {
    stop_ = true;
    sync_.arrive_and_wait();
    worker_.join();
  }
  TwoThreadGemv(const TwoThreadGemv&) = delete;
  TwoThreadGemv& operator=(const TwoThreadGemv&) = delete;

  void call(int64_t i) {
    index_ = i;
    sync_.arrive_and_wait();
    first_(i);
    sync_.arrive_and_wait();
  }

 private:
  void work() {
    while (true) {
      sync_.arrive_and_wait();
      if (stop_) return;
      second_(index_);
      sync_.arrive_and_wait();
    }
  }

  std::barrier<> sync_;
  bool stop_ = false;  // written before a barrier, read after it
  int64_t index_ = 0;
  std::function<void(int64_t)> first_;
  std::function<void(int64_t)> second_;
  std::thread worker_;
};

std::vector<const CpuKernels*> levels(const Options& opts) {
  std::vector<const CpuKernels*> out;
  for (CpuLevel level : {CpuLevel::kScalar, CpuLevel::kAvx2, CpuLevel::kAvx512,
                         CpuLevel::kAvx512Vnni, CpuLevel::kAvx512Bf16}) {
    if (level == CpuLevel::kScalar && !opts.scalar) continue;
    if (const CpuKernels* k = cpu_kernels_for(level)) out.push_back(k);
  }
  return out;
}

std::string name(const CpuKernels& k) { return std::string(cpu_level_name(k.level)); }

void run_gemv(const Options& opts, double bw1, double bw2) {
  std::printf("GEMV (1 token, bf16 weights from DRAM): GB/s of weights read\n");
  std::printf("  'of read': vs a streaming read of the same pool, timed interleaved with it\n");
  std::printf("%-24s %-12s %-11s %8s %8s %8s %8s\n", "shape", "op", "level", "GB/s", "x scalar",
              "of read", "of 1t BW");
  const std::vector<const CpuKernels*> ks = levels(opts);
  for (const Shape& shape : kGemvShapes) {
    const WeightPool pool(shape, opts.pool_mib << 20);
    Activations act(shape, 1);
    const double bytes = static_cast<double>(shape.rows * shape.cols * 2);
    std::vector<Variant> variants;
    variants.push_back({"read", [&](int64_t i) {
                          const WeightView w = pool.copy(i);
                          (void)read_once(w.data, w.rows * w.cols * 2);
                        }});
    for (Op op : {Op::kMatmulF32, Op::kMatmulBf16}) {
      for (const CpuKernels* k : ks) {
        variants.push_back({name(*k), matmul_call(*k, op, pool, &act, 0, shape.rows)});
      }
    }
    time_interleaved(&variants, opts);
    const double read_rate = bytes / variants[0].best_seconds;
    for (size_t i = 1; i < variants.size(); ++i) {
      const size_t op_index = (i - 1) / ks.size();
      const double rate = bytes / variants[i].best_seconds;
      const double scalar = ks[0]->level == CpuLevel::kScalar
                                ? bytes / variants[1 + op_index * ks.size()].best_seconds
                                : 0.0;
      std::printf("%-24s %-12s %-11s %8.2f %8.1f %7.0f%% %7.0f%%\n", shape.name,
                  op_name(op_index == 0 ? Op::kMatmulF32 : Op::kMatmulBf16),
                  variants[i].label.c_str(), rate / 1e9, scalar > 0 ? rate / scalar : 0.0,
                  100.0 * rate / read_rate, 100.0 * rate / bw1);
    }
    std::printf("%-24s %-24s %8.2f\n", shape.name, "streaming read", read_rate / 1e9);
  }

  const CpuKernels& best = cpu_kernels();
  std::printf("\nGEMV matmul_bf16 on 2 threads (rows split), level %s\n", name(best).c_str());
  for (const Shape& shape : {kGemvShapes[0], kGemvShapes[5]}) {
    const WeightPool pool(shape, opts.pool_mib << 20);
    Activations act(shape, 1);
    TwoThreadGemv gemv(best, pool, &act);
    std::vector<Variant> variants;
    variants.push_back({"2 threads", [&](int64_t i) { gemv.call(i); }});
    time_interleaved(&variants, opts);
    const double rate = static_cast<double>(shape.rows * shape.cols * 2) / variants[0].best_seconds;
    std::printf("%-24s %8.2f GB/s  %5.0f%% of 2-thread BW\n", shape.name, rate / 1e9,
                100.0 * rate / bw2);
  }
}

void run_gemm(const Options& opts) {
  std::printf(
      "\nGEMM (prefill, 1 thread, weights from DRAM): GFLOP/s (2 * rows * cols * tokens)\n");
  std::printf("%-24s %6s %-12s %-11s %8s %8s\n", "shape", "tokens", "op", "level", "GFLOP/s",
              "x scalar");
  const std::vector<const CpuKernels*> ks = levels(opts);
  for (const Shape& shape : kGemmShapes) {
    const WeightPool pool(shape, (opts.pool_mib << 20) / 4);
    for (int64_t n_tokens : kGemmTokens) {
      Activations act(shape, n_tokens);
      const double flops = 2.0 * static_cast<double>(shape.rows * shape.cols * n_tokens);
      std::vector<Variant> variants;
      for (Op op : {Op::kMatmulF32, Op::kMatmulBf16}) {
        for (const CpuKernels* k : ks) {
          variants.push_back({name(*k), matmul_call(*k, op, pool, &act, 0, shape.rows)});
        }
      }
      time_interleaved(&variants, opts);
      for (size_t i = 0; i < variants.size(); ++i) {
        const size_t op_index = i / ks.size();
        const double rate = flops / variants[i].best_seconds;
        const double scalar = ks[0]->level == CpuLevel::kScalar
                                  ? flops / variants[op_index * ks.size()].best_seconds
                                  : 0.0;
        std::printf("%-24s %6lld %-12s %-11s %8.1f %8.1f\n", shape.name,
                    static_cast<long long>(n_tokens),
                    op_name(op_index == 0 ? Op::kMatmulF32 : Op::kMatmulBf16),
                    variants[i].label.c_str(), rate / 1e9, scalar > 0 ? rate / scalar : 0.0);
      }
    }
  }
}

// bf16 experts in both layouts, this machine's matmul_bf16, one thread,
// weights from DRAM: GB/s of weights and the interleaved / rows ratio.
void run_experts(const Options& opts) {
  const CpuKernels& k = cpu_kernels();
  std::printf("\nbf16 experts, rows vs interleaved by 16 rows (%s, 1 thread, from DRAM): GB/s\n",
              name(k).c_str());
  if (!k.interleaved_bf16) {
    std::printf(
        "  (this level computes interleaved bf16 through rows copies: not a node's choice)\n");
  }
  std::printf("%-26s %6s %8s %8s %7s\n", "shape", "tokens", "rows", "i16", "ratio");
  const Shape shapes[] = {{"medium gate/up 512x1024", 512, 1024},
                          {"medium down 1024x512", 1024, 512},
                          {"small expert 256x256", 256, 256}};
  for (const Shape& shape : shapes) {
    const WeightPool rows(shape, (opts.pool_mib << 20) / 2);
    const WeightPool interleaved(shape, (opts.pool_mib << 20) / 2, WeightLayout::kInterleaved16);
    for (int64_t n_tokens : {1, 2, 4, 8, 16, 64}) {
      Activations act(shape, n_tokens);
      std::vector<Variant> variants;
      variants.push_back({"rows", matmul_call(k, Op::kMatmulBf16, rows, &act, 0, shape.rows)});
      variants.push_back(
          {"i16", matmul_call(k, Op::kMatmulBf16, interleaved, &act, 0, shape.rows)});
      time_interleaved(&variants, opts);
      const double bytes = static_cast<double>(shape.rows * shape.cols * 2);
      std::printf("%-26s %6lld %8.2f %8.2f %6.2fx\n", shape.name, static_cast<long long>(n_tokens),
                  bytes / variants[0].best_seconds / 1e9, bytes / variants[1].best_seconds / 1e9,
                  variants[0].best_seconds / variants[1].best_seconds);
    }
  }
}

// The small ops on model-sized, cache-resident inputs: microseconds per call
// and speed-up over scalar. Sizes: hidden 1024, 16 query / 4 KV heads of 64,
// expert intermediate 512, vocabulary 32000, a 1024-position KV cache.
void run_ops(const Options& opts) {
  std::printf("\nOther ops (cache-resident inputs): microseconds per call\n");
  const std::vector<const CpuKernels*> ks = levels(opts);
  constexpr int64_t kHidden = 1024, kHeads = 16, kKvHeads = 4, kHeadDim = 64, kCtx = 1024;
  constexpr int64_t kVocab = 32000, kInter = 512, kConvert = 1 << 16;
  std::vector<float> a(kVocab), b(kVocab), out(kVocab), scratch(kCtx);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>((i * 37) % 101) / 25.0f - 2.0f;
    b[i] = static_cast<float>((i * 53) % 97) / 48.0f - 1.0f;
  }
  // One query of kHeads heads against kCtx positions of n_kv_heads KV heads.
  auto attention_args = [&](int64_t n_kv_heads) {
    AttentionArgs args;
    args.q = a.data();
    args.kv_stride = n_kv_heads * kHeadDim;
    args.n_ctx = kCtx;
    args.n_heads = kHeads;
    args.n_kv_heads = n_kv_heads;
    args.head_dim = kHeadDim;
    args.scale = 0.125f;
    args.out = out.data();
    args.scratch = scratch.data();
    args.head_begin = 0;
    args.head_end = kHeads;
    return args;
  };
  std::vector<float> kv(static_cast<size_t>(kCtx * kKvHeads * kHeadDim));
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = static_cast<float>((i * 29) % 89) / 44.0f - 1.0f;
  // A decoding sequence's caches at 1024 positions, 16 layers of the medium
  // preset (8 KV heads of 64): 64 MiB in f32, more than the last-level cache,
  // so each call reads the next layer's keys and values from DRAM, as decode
  // does. --kv-type f32 vs bf16 (half the bytes).
  constexpr int64_t kLayers = 16, kCacheKvHeads = 8, kCacheKvDim = kCacheKvHeads * kHeadDim;
  const size_t layer_values = static_cast<size_t>(kCtx * kCacheKvDim);
  std::vector<float> cache_f32(2 * kLayers * layer_values);
  std::vector<uint16_t> cache_bf16(cache_f32.size());
  for (size_t i = 0; i < cache_f32.size(); ++i) {
    cache_f32[i] = static_cast<float>((i * 29) % 89) / 44.0f - 1.0f;
    cache_bf16[i] = float_to_bf16(cache_f32[i]);
  }
  int64_t next_layer = 0;
  auto cached_attention = [&](const CpuKernels& k, bool bf16) {
    const size_t at = static_cast<size_t>(next_layer) * 2 * layer_values;
    next_layer = (next_layer + 1) % kLayers;
    AttentionArgs args = attention_args(kCacheKvHeads);
    if (bf16) {
      args.k_bf16 = cache_bf16.data() + at;
      args.v_bf16 = cache_bf16.data() + at + layer_values;
    } else {
      args.k = cache_f32.data() + at;
      args.v = cache_f32.data() + at + layer_values;
    }
    k.attention(args);
  };
  std::vector<uint16_t> half(kConvert);
  std::vector<float> scratch_wide(kConvert);
  for (size_t i = 0; i < half.size(); ++i) half[i] = float_to_bf16(a[i % a.size()]);

  struct OpCase {
    const char* name;
    std::function<void(const CpuKernels&)> run;
  };
  const OpCase cases[] = {
      {"rmsnorm 1024",
       [&](const CpuKernels& k) { k.rmsnorm(a.data(), b.data(), kHidden, 1e-6f, out.data()); }},
      {"rope 16x64",
       [&](const CpuKernels& k) { k.rope(out.data(), kHeads, kHeadDim, a.data(), b.data()); }},
      {"softmax 32000",
       [&](const CpuKernels& k) {
         std::copy(a.begin(), a.end(), out.begin());
         k.softmax(out.data(), kVocab);
       }},
      {"swiglu 512",
       [&](const CpuKernels& k) { k.swiglu(a.data(), b.data(), kInter, out.data()); }},
      {"attention 16h ctx1024",
       [&](const CpuKernels& k) {
         AttentionArgs args = attention_args(kKvHeads);
         args.k = kv.data();
         args.v = kv.data();
         k.attention(args);
       }},
      {"attn ctx1024 f32 KV DRAM", [&](const CpuKernels& k) { cached_attention(k, false); }},
      {"attn ctx1024 bf16KV DRAM", [&](const CpuKernels& k) { cached_attention(k, true); }},
      {"dot 1024", [&](const CpuKernels& k) { out[0] = k.dot(a.data(), b.data(), kHidden); }},
      {"axpy 1024", [&](const CpuKernels& k) { k.axpy(0.5f, a.data(), out.data(), kHidden); }},
      {"bf16_to_f32 65536",
       [&](const CpuKernels& k) { k.bf16_to_f32(half.data(), kConvert, scratch_wide.data()); }},
      {"f32_to_bf16 32000",
       [&](const CpuKernels& k) { k.f32_to_bf16(a.data(), kVocab, half.data()); }},
  };
  std::printf("%-24s", "op");
  for (const CpuKernels* k : ks) std::printf(" %11s", name(*k).c_str());
  std::printf("   best x scalar\n");
  for (const OpCase& op : cases) {
    std::vector<Variant> variants;
    for (const CpuKernels* k : ks)
      variants.push_back({name(*k), [&op, k](int64_t) { op.run(*k); }});
    time_interleaved(&variants, opts);
    std::printf("%-24s", op.name);
    double best = variants[0].best_seconds;
    for (const Variant& v : variants) {
      std::printf(" %11.2f", v.best_seconds * 1e6);
      best = std::min(best, v.best_seconds);
    }
    if (ks[0]->level == CpuLevel::kScalar) std::printf("   %8.1f", variants[0].best_seconds / best);
    std::printf("\n");
  }
}

Options parse(int argc, char** argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      opts.seconds = std::atof(argv[++i]);
    } else if (arg == "--pool-mib" && i + 1 < argc) {
      opts.pool_mib = std::atoll(argv[++i]);
    } else if (arg == "--only" && i + 1 < argc) {
      opts.only = argv[++i];
    } else if (arg == "--no-scalar") {
      opts.scalar = false;
    } else {
      std::fprintf(stderr,
                   "usage: bench_kernels [--seconds S] [--pool-mib M] [--no-scalar] "
                   "[--only gemv|gemm|ops|experts]\n");
      std::exit(2);
    }
  }
  return opts;
}

int run(int argc, char** argv) {
  const Options opts = parse(argc, argv);
  std::printf("CPU level detected: %s\n", std::string(cpu_level_name(detect_cpu_level())).c_str());
  const double bw1 = measure_read_bandwidth_bytes_per_s(int64_t{512} << 20, 1, 1.0);
  const double bw2 = measure_read_bandwidth_bytes_per_s(int64_t{512} << 20, 2, 1.0);
  std::printf("streaming read bandwidth (512 MiB): 1 thread %.1f GB/s, 2 threads %.1f GB/s\n\n",
              bw1 / 1e9, bw2 / 1e9);
  if (opts.only.empty() || opts.only == "gemv") run_gemv(opts, bw1, bw2);
  if (opts.only.empty() || opts.only == "gemm") run_gemm(opts);
  if (opts.only.empty() || opts.only == "experts") run_experts(opts);
  if (opts.only.empty() || opts.only == "ops") run_ops(opts);
  return 0;
}

}  // namespace
}  // namespace dancemoe::kernels

int main(int argc, char** argv) { return dancemoe::kernels::run(argc, argv); }
