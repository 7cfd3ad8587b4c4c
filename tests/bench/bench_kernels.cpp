// Kernel benchmark: for every CPU level this machine has, decode GEMV
// bandwidth (weights cycled through a pool far larger than the last-level
// cache, so they come from DRAM as in a real model), prefill GEMM throughput,
// and the streaming-read bandwidth the GEMV is measured against.
//
// Shapes are the "medium" preset: hidden 1024, attention q/o
// 1024x1024, k/v 512x1024, expert gate/up 512x1024 and down 1024x512, router
// 32x1024, lm_head 32000x1024; bf16 weights [out_features, in_features].
//
// usage: bench_kernels [--seconds S] [--pool-mib M] [--no-scalar] [--only gemv|gemm]
// Build in Release (-DCMAKE_BUILD_TYPE=Release); run on an idle machine.
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "kernels/cpu/memory_bandwidth.h"
#include "kernels/cpu/numeric.h"
#include "kernels/kernels.h"

namespace dancemoe::kernels {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  double seconds = 0.3;    // per measurement
  int64_t pool_mib = 512;  // weights cycled through, >> L3
  bool scalar = true;
  std::string only;  // "", "gemv" or "gemm": run one section
};

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
const int64_t kGemmTokens[] = {8, 32, 128};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Copies of one bf16 weight matrix filling about pool_bytes, each copy
// starting on its own cache line. Values are finite, varied bf16 numbers.
class WeightPool {
 public:
  WeightPool(const Shape& shape, int64_t pool_bytes) : shape_(shape) {
    const int64_t matrix_bytes = shape.rows * shape.cols * 2;
    copy_stride_bytes_ = (matrix_bytes + 63) / 64 * 64;
    n_copies_ = pool_bytes / copy_stride_bytes_ > 1 ? pool_bytes / copy_stride_bytes_ : 1;
    const int64_t total = (copy_stride_bytes_ * n_copies_ + (2 << 20) - 1) / (2 << 20) * (2 << 20);
    data_.reset(static_cast<char*>(std::aligned_alloc(2 << 20, static_cast<size_t>(total))));
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
  }
  WeightView copy(int64_t i) const {
    return WeightView{data_.get() + (i % n_copies_) * copy_stride_bytes_, WeightType::kBF16,
                      shape_.rows, shape_.cols};
  }
  int64_t n_copies() const { return n_copies_; }

 private:
  Shape shape_;
  int64_t copy_stride_bytes_ = 0;
  int64_t n_copies_ = 0;
  std::unique_ptr<char, FreeDeleter> data_;
};

enum class Op { kMatmulF32, kMatmulBf16 };
const char* op_name(Op op) { return op == Op::kMatmulF32 ? "matmul_f32" : "matmul_bf16"; }

// Runs one matmul per call, cycling through the pool, in batches of at least
// 20 ms for about opts.seconds, after one warm-up call; returns the seconds
// per call of the fastest batch. The best batch rather than the mean because
// the machine is shared: a batch during which another process held the core
// says nothing about the kernel.
template <class Call>
double best_seconds_per_call(const Options& opts, Call&& call) {
  call(0);
  int64_t index = 1;
  double best = 0.0;
  const Clock::time_point begin = Clock::now();
  while (best == 0.0 ||
         std::chrono::duration<double>(Clock::now() - begin).count() < opts.seconds) {
    const Clock::time_point start = Clock::now();
    int64_t n_calls = 0;
    double elapsed = 0.0;
    while (n_calls < 2 || elapsed < 0.02) {
      call(index++);
      ++n_calls;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    }
    const double per_call = elapsed / static_cast<double>(n_calls);
    if (best == 0.0 || per_call < best) best = per_call;
  }
  return best;
}

double time_matmul(const CpuKernels& k, Op op, const WeightPool& pool, int64_t n_tokens,
                   const Options& opts) {
  const WeightView w0 = pool.copy(0);
  std::vector<float> x(static_cast<size_t>(n_tokens * w0.cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  std::vector<uint16_t> x_bf16(x.size());
  for (size_t i = 0; i < x.size(); ++i) x_bf16[i] = float_to_bf16(x[i]);
  std::vector<float> y(static_cast<size_t>(n_tokens * w0.rows));
  return best_seconds_per_call(opts, [&](int64_t i) {
    MatmulArgs args;
    args.w = pool.copy(i);
    args.n_tokens = n_tokens;
    args.y = y.data();
    args.y_stride = w0.rows;
    args.row_begin = 0;
    args.row_end = w0.rows;
    if (op == Op::kMatmulF32) {
      k.matmul_f32(args, x.data());
    } else {
      k.matmul_bf16(args, x_bf16.data());
    }
  });
}

// A GEMV split by rows over two threads (the caller and one worker), as the
// model runs it; a barrier starts and ends each call.
double time_gemv_two_threads(const CpuKernels& k, const WeightPool& pool, const Options& opts) {
  const WeightView w0 = pool.copy(0);
  std::vector<float> x(static_cast<size_t>(w0.cols), 0.5f);
  std::vector<float> y(static_cast<size_t>(w0.rows));
  std::barrier sync(2);
  bool stop = false;
  int64_t call_index = 0;
  auto half = [&](int part) {
    MatmulArgs args;
    args.w = pool.copy(call_index);
    args.n_tokens = 1;
    args.y = y.data();
    args.y_stride = w0.rows;
    const int64_t mid = w0.rows / 2 / 8 * 8;
    args.row_begin = part == 0 ? 0 : mid;
    args.row_end = part == 0 ? mid : w0.rows;
    k.matmul_f32(args, x.data());
  };
  std::thread worker([&] {
    while (true) {
      sync.arrive_and_wait();
      if (stop) break;
      half(1);
      sync.arrive_and_wait();
    }
  });
  const double seconds = best_seconds_per_call(opts, [&](int64_t i) {
    call_index = i;
    sync.arrive_and_wait();
    half(0);
    sync.arrive_and_wait();
  });
  stop = true;
  sync.arrive_and_wait();
  worker.join();
  return seconds;
}

std::vector<const CpuKernels*> levels(const Options& opts) {
  std::vector<const CpuKernels*> out;
  for (CpuLevel level :
       {CpuLevel::kScalar, CpuLevel::kAvx2, CpuLevel::kAvx512, CpuLevel::kAvx512Bf16}) {
    if (level == CpuLevel::kScalar && !opts.scalar) continue;
    if (const CpuKernels* k = cpu_kernels_for(level)) out.push_back(k);
  }
  return out;
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
      std::fprintf(
          stderr,
          "usage: bench_kernels [--seconds S] [--pool-mib M] [--no-scalar] [--only gemv|gemm]\n");
      std::exit(2);
    }
  }
  return opts;
}

void run_gemv(const Options& opts, double bw1, double bw2);
void run_gemm(const Options& opts);

int run(int argc, char** argv) {
  const Options opts = parse(argc, argv);
  std::printf("CPU level detected: %s\n", std::string(cpu_level_name(detect_cpu_level())).c_str());
  const double bw1 = measure_read_bandwidth_bytes_per_s(int64_t{512} << 20, 1, 1.0);
  const double bw2 = measure_read_bandwidth_bytes_per_s(int64_t{512} << 20, 2, 1.0);
  std::printf("streaming read bandwidth: 1 thread %.1f GB/s, 2 threads %.1f GB/s\n\n", bw1 / 1e9,
              bw2 / 1e9);
  if (opts.only != "gemm") run_gemv(opts, bw1, bw2);
  if (opts.only != "gemv") run_gemm(opts);
  return 0;
}

void run_gemv(const Options& opts, double bw1, double bw2) {
  const int64_t pool_bytes = opts.pool_mib << 20;
  std::printf("GEMV (1 token, bf16 weights from DRAM): GB/s of weights read\n");
  std::printf("%-26s %-12s %-11s %9s %8s %9s\n", "shape", "op", "level", "GB/s", "x scalar",
              "of 1t BW");
  for (const Shape& shape : kGemvShapes) {
    const WeightPool pool(shape, pool_bytes);
    const double bytes = static_cast<double>(shape.rows * shape.cols * 2);
    for (Op op : {Op::kMatmulF32, Op::kMatmulBf16}) {
      double scalar_rate = 0.0;
      for (const CpuKernels* k : levels(opts)) {
        const double rate = bytes / time_matmul(*k, op, pool, 1, opts);
        if (k->level == CpuLevel::kScalar) scalar_rate = rate;
        std::printf("%-26s %-12s %-11s %9.2f %8.1f %8.0f%%\n", shape.name, op_name(op),
                    std::string(cpu_level_name(k->level)).c_str(), rate / 1e9,
                    scalar_rate > 0 ? rate / scalar_rate : 0.0, 100.0 * rate / bw1);
      }
    }
  }

  const CpuKernels& best = cpu_kernels();
  std::printf("\nGEMV matmul_f32 on 2 threads (rows split), level %s\n",
              std::string(cpu_level_name(best.level)).c_str());
  for (const Shape& shape : {kGemvShapes[0], kGemvShapes[5]}) {
    const WeightPool pool(shape, pool_bytes);
    const double rate =
        static_cast<double>(shape.rows * shape.cols * 2) / time_gemv_two_threads(best, pool, opts);
    std::printf("%-26s %9.2f GB/s  %5.0f%% of 2-thread BW\n", shape.name, rate / 1e9,
                100.0 * rate / bw2);
  }
}

void run_gemm(const Options& opts) {
  const int64_t pool_bytes = opts.pool_mib << 20;
  std::printf("\nGEMM (prefill, 1 thread): GFLOP/s (2 * rows * cols * tokens per call)\n");
  std::printf("%-26s %6s %-12s %-11s %9s %8s\n", "shape", "tokens", "op", "level", "GFLOP/s",
              "x scalar");
  for (const Shape& shape : kGemmShapes) {
    const WeightPool pool(shape, pool_bytes / 4);
    for (int64_t n_tokens : kGemmTokens) {
      const double flops = 2.0 * static_cast<double>(shape.rows * shape.cols * n_tokens);
      for (Op op : {Op::kMatmulF32, Op::kMatmulBf16}) {
        double scalar_rate = 0.0;
        for (const CpuKernels* k : levels(opts)) {
          const double rate = flops / time_matmul(*k, op, pool, n_tokens, opts);
          if (k->level == CpuLevel::kScalar) scalar_rate = rate;
          std::printf("%-26s %6lld %-12s %-11s %9.1f %8.1f\n", shape.name,
                      static_cast<long long>(n_tokens), op_name(op),
                      std::string(cpu_level_name(k->level)).c_str(), rate / 1e9,
                      scalar_rate > 0 ? rate / scalar_rate : 0.0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace dancemoe::kernels

int main(int argc, char** argv) { return dancemoe::kernels::run(argc, argv); }
