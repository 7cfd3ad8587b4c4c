// Quantized kernel benchmark: for every weight format (Q8_0, Q4_0, Q4_K,
// Q5_K, Q6_K, and bf16 for reference) and every CPU level this machine has,
//   - decode GEMV (1 token) from DRAM: GB/s of weight bytes read, against a
//     streaming read of the same pool timed interleaved with it ("of read"),
//     on one thread and on two (rows split, as the thread pool does);
//   - prefill GEMM (32 and 128 tokens, or --tokens): GMAC/s (rows x cols x
//     tokens per second), one thread. Its calls cycle through a pool of
//     --gemm-pool-mib (default 64): each call reads its weights from DRAM once
//     and from L2 for its further token blocks, so at 1 or 2 tokens this is a
//     GEMV from DRAM, bound by one core's read rate. --gemm-pool-mib 1 keeps
//     every call's weights in L2: the kernel's compute rate (at 1 token on
//     Zen 4, 29 Nov 2026: Q4_K ~112 GMAC/s = 63 GB/s, Q8_0 / Q6_K ~65 GMAC/s,
//     against ~55 / ~33 / ~39 from DRAM);
//   - activation quantization: microseconds for 128 x 1024 values.
// Shapes are the medium preset's (hidden 1024, expert 512).
//
// usage: bench_quant_kernels [--seconds S] [--pool-mib M] [--no-scalar]
//                            [--only gemv|gemm|quantize_x] [--type q4_K|...] [--mmap FILE]
//                            [--tokens 32,128] [--gemm-pool-mib M]
// --mmap FILE puts the GEMV weights in a memory-mapped file (page-cache
// pages, as GGUF weights computed in place) instead of anonymous huge pages.
// Build in Release (-DCMAKE_BUILD_TYPE=Release).
#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "kernels/cpu/memory_bandwidth.h"
#include "kernels/interleave.h"
#include "kernels/kernels.h"
#include "kernels/quant_format.h"
#include "kernels/quantize.h"
#include "tests/bench/interleaved_timer.h"

namespace dancemoe::kernels {
namespace {

using bench::Variant;

struct Options {
  double seconds = 0.3;
  int64_t pool_mib = 512;
  bool scalar = true;
  // --mmap FILE: the GEMV pool lives in this file, memory-mapped (page-cache
  // pages, as a GGUF's weights used in place), instead of anonymous memory.
  std::string mmap_file;
  std::string only;                         // "", "gemv", "gemm" or "quantize_x"
  std::string type;                         // "": every type
  std::vector<int64_t> tokens = {32, 128};  // --tokens: the GEMM's token counts
  int64_t gemm_pool_mib = 64;               // --gemm-pool-mib: the GEMM's copies
};

bool wanted(const Options& opts, WeightType type) {
  return opts.type.empty() || opts.type == weight_type_name(type);
}

struct Shape {
  const char* name;
  int64_t rows, cols;
};
const Shape kShapes[] = {{"attn q 1024x1024", 1024, 1024},
                         {"expert gate 512x1024", 512, 1024},
                         {"expert down 1024x512", 1024, 512},
                         {"lm_head 32000x1024", 32000, 1024}};
const WeightType kTypes[] = {WeightType::kBF16, WeightType::kQ8_0, WeightType::kQ4_0,
                             WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Copies of one quantized matrix filling about pool_bytes: anonymous memory
// on huge pages, or (mmap_file) a file written with the copies and mapped;
// Q4_K / Q5_K / Q6_K / Q8_0 interleaved by 16 rows (kernels/interleave.h) when `layout` says so.
class Pool {
 public:
  Pool(const Shape& s, WeightType type, int64_t pool_bytes, const std::string& mmap_file = "",
       WeightLayout layout = WeightLayout::kRows)
      : shape_(s), type_(type), layout_(layout) {
    const bool interleave = layout == WeightLayout::kInterleaved16;
    const int64_t matrix = s.rows * weight_row_bytes(type, s.cols);
    stride_ = (matrix + 255) / 256 * 256;
    n_copies_ = std::max<int64_t>(1, pool_bytes / stride_);
    const int64_t huge = int64_t{2} << 20;
    const int64_t total = (stride_ * n_copies_ + huge - 1) / huge * huge;
    data_.reset(static_cast<uint8_t*>(std::aligned_alloc(huge, static_cast<size_t>(total))));
#if defined(MADV_HUGEPAGE)
    madvise(data_.get(), static_cast<size_t>(total), MADV_HUGEPAGE);
#endif
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<float> w(static_cast<size_t>(s.rows * s.cols));
    for (float& v : w) v = dist(rng);
    if (interleave) {
      std::vector<uint8_t> rows(static_cast<size_t>(s.rows * weight_row_bytes(type, s.cols)));
      quantize_rows(type, w.data(), s.rows, s.cols, rows.data());
      interleave_matrix(type, rows.data(), s.rows, s.cols, data_.get());
    } else {
      quantize_rows(type, w.data(), s.rows, s.cols, data_.get());
    }
    for (int64_t c = 1; c < n_copies_; ++c) {
      std::memcpy(data_.get() + c * stride_, data_.get(), static_cast<size_t>(matrix));
    }
    bytes_ = matrix;
    base_ = data_.get();
#if defined(__linux__)
    if (!mmap_file.empty()) {
      FILE* f = std::fopen(mmap_file.c_str(), "wb");
      if (f == nullptr || std::fwrite(data_.get(), 1, static_cast<size_t>(total), f) !=
                              static_cast<size_t>(total)) {
        std::fprintf(stderr, "cannot write %s\n", mmap_file.c_str());
        std::exit(1);
      }
      std::fclose(f);
      const int fd = open(mmap_file.c_str(), O_RDONLY);
      void* m = mmap(nullptr, static_cast<size_t>(total), PROT_READ, MAP_SHARED, fd, 0);
      close(fd);
      if (m == MAP_FAILED) std::exit(1);
      mapped_ = m;
      mapped_bytes_ = total;
      base_ = static_cast<uint8_t*>(m);
      data_.reset();
    }
#endif
  }
  ~Pool() {
#if defined(__linux__)
    if (mapped_ != nullptr) munmap(mapped_, static_cast<size_t>(mapped_bytes_));
#endif
  }
  WeightView copy(int64_t i) const {
    return WeightView{base_ + (i % n_copies_) * stride_, type_, shape_.rows, shape_.cols, layout_};
  }
  int64_t matrix_bytes() const { return bytes_; }

 private:
  Shape shape_;
  WeightType type_;
  WeightLayout layout_;
  int64_t stride_ = 0, n_copies_ = 0, bytes_ = 0;
  std::unique_ptr<uint8_t, FreeDeleter> data_;
  const uint8_t* base_ = nullptr;
  void* mapped_ = nullptr;
  int64_t mapped_bytes_ = 0;
};

// Activations of n tokens, f32, bf16 and quantized for `type`.
struct Act {
  Act(const CpuKernels& k, WeightType type, const Shape& s, int64_t n) : n_tokens(n) {
    x.resize(static_cast<size_t>(n * s.cols));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
    x_bf16.resize(x.size());
    k.f32_to_bf16(x.data(), static_cast<int64_t>(x.size()), x_bf16.data());
    if (is_block_format(type)) {
      xq.resize(static_cast<size_t>(n * quantized_x_row_bytes(type, s.cols)));
      k.quantize_x(type, x.data(), n, s.cols, xq.data());
    }
    y.resize(static_cast<size_t>(n * s.rows));
  }
  int64_t n_tokens;
  std::vector<float> x;
  std::vector<uint16_t> x_bf16;
  std::vector<uint8_t> xq;
  std::vector<float> y;
};

// Block formats go through matmul_quantized (bf16 activations), as the
// runtime calls them: the integer kernel at decode, dequantize + GEMM at prefill.
void matmul(const CpuKernels& k, const WeightView& w, Act* a, int64_t r0, int64_t r1) {
  MatmulArgs args{w, a->n_tokens, a->y.data(), w.rows, r0, r1};
  if (is_block_format(w.type)) {
    matmul_quantized(k, args, QuantizedInput{a->xq.data(), a->x_bf16.data()});
  } else {
    k.matmul_bf16(args, a->x_bf16.data());
  }
}

void matmul_int8(const CpuKernels& k, const WeightView& w, Act* a) {
  MatmulArgs args{w, a->n_tokens, a->y.data(), w.rows, 0, w.rows};
  k.matmul_quant(args, a->xq.data());
}

std::vector<const CpuKernels*> levels(const Options& opts) {
  std::vector<const CpuKernels*> out;
  for (CpuLevel level : {CpuLevel::kScalar, CpuLevel::kAvx2, CpuLevel::kAvx512,
                         CpuLevel::kAvx512Vnni, CpuLevel::kAvx512Bf16}) {
    if (level == CpuLevel::kScalar && !opts.scalar) continue;
    if (const CpuKernels* k = cpu_kernels_for(level)) out.push_back(k);
  }
  return out;
}

std::string level(const CpuKernels& k) { return std::string(cpu_level_name(k.level)); }

// Two threads each take half the rows of a call; barriers start and end it.
class TwoThreads {
 public:
  explicit TwoThreads(std::function<void(int64_t, int)> work)
      : work_(std::move(work)), sync_(2), worker_([this] {
          while (true) {
            sync_.arrive_and_wait();
            if (stop_) return;
            work_(index_, 1);
            sync_.arrive_and_wait();
          }
        }) {}
  ~TwoThreads() {
    stop_ = true;
    sync_.arrive_and_wait();
    worker_.join();
  }
  void call(int64_t i) {
    index_ = i;
    sync_.arrive_and_wait();
    work_(i, 0);
    sync_.arrive_and_wait();
  }

 private:
  std::function<void(int64_t, int)> work_;
  std::barrier<> sync_;
  bool stop_ = false;
  int64_t index_ = 0;
  std::thread worker_;
};

void run_gemv(const Options& opts, double bw1, double bw2) {
  std::printf("GEMV, 1 token, weights from DRAM: GB/s of weight bytes (rows x row bytes)\n");
  std::printf("%-22s %-5s %-15s %8s %8s %9s\n", "shape", "type", "level", "GB/s", "of read",
              "tok-eq/s");
  const CpuKernels& best = cpu_kernels();
  for (const Shape& s : kShapes) {
    for (WeightType type : kTypes) {
      if (!wanted(opts, type)) continue;
      const Pool pool(s, type, opts.pool_mib << 20, opts.mmap_file);
      std::vector<Variant> variants;
      variants.push_back({"read", [&](int64_t i) {
                            const WeightView w = pool.copy(i);
                            (void)read_once(w.data, pool.matrix_bytes() / 256 * 256);
                          }});
      std::vector<std::unique_ptr<Act>> acts;
      for (const CpuKernels* k : levels(opts)) {
        if (!is_block_format(type) && k->level == CpuLevel::kScalar) continue;
        acts.push_back(std::make_unique<Act>(*k, type, s, 1));
        Act* a = acts.back().get();
        variants.push_back(
            {level(*k), [&pool, k, a, &s](int64_t i) { matmul(*k, pool.copy(i), a, 0, s.rows); }});
      }
      acts.push_back(std::make_unique<Act>(best, type, s, 1));
      Act* a2 = acts.back().get();
      TwoThreads two([&pool, &best, a2, &s](int64_t i, int part) {
        const int64_t mid = s.rows / 2 / 16 * 16;
        matmul(best, pool.copy(i), a2, part == 0 ? 0 : mid, part == 0 ? mid : s.rows);
      });
      variants.push_back({"2 threads", [&two](int64_t i) { two.call(i); }});
      const size_t n_rows_variants = variants.size();
      // Q4_K / Q5_K / Q6_K / Q8_0 interleaved copy at the levels with its kernel ("i16";
      // the same bytes as the rows).
      std::unique_ptr<Pool> ipool;
      std::unique_ptr<TwoThreads> itwo;
      if (can_interleave(type, s.rows, s.cols) && best.interleaved_k) {
        ipool = std::make_unique<Pool>(s, type, opts.pool_mib << 20, opts.mmap_file,
                                       WeightLayout::kInterleaved16);
        const Pool* ip = ipool.get();
        for (const CpuKernels* k : levels(opts)) {
          if (!k->interleaved_k) continue;
          acts.push_back(std::make_unique<Act>(*k, type, s, 1));
          Act* a = acts.back().get();
          variants.push_back({level(*k) + " i16", [ip, k, a, &s](int64_t i) {
                                matmul(*k, ip->copy(i), a, 0, s.rows);
                              }});
        }
        acts.push_back(std::make_unique<Act>(best, type, s, 1));
        Act* a3 = acts.back().get();
        itwo = std::make_unique<TwoThreads>([ip, &best, a3, &s](int64_t i, int part) {
          const int64_t mid = s.rows / 2 / 16 * 16;
          matmul(best, ip->copy(i), a3, part == 0 ? 0 : mid, part == 0 ? mid : s.rows);
        });
        TwoThreads* it = itwo.get();
        variants.push_back({"2 threads i16", [it](int64_t i) { it->call(i); }});
      }
      bench::time_interleaved(&variants, opts.seconds);
      const double read = static_cast<double>(pool.matrix_bytes()) / variants[0].best_seconds;
      for (size_t i = 1; i < variants.size(); ++i) {
        const double bytes =
            static_cast<double>(i < n_rows_variants ? pool.matrix_bytes() : ipool->matrix_bytes());
        const double rate = bytes / variants[i].best_seconds;
        const bool two_threads = i + 1 == n_rows_variants || i + 1 == variants.size();
        std::printf("%-22s %-5s %-15s %8.2f %7.0f%% %9.0f\n", s.name,
                    std::string(weight_type_name(type)).c_str(), variants[i].label.c_str(),
                    rate / 1e9, 100.0 * rate / (two_threads ? bw2 : read),
                    1.0 / variants[i].best_seconds);
      }
    }
  }
  std::printf(
      "  'of read': 1 thread vs the streaming read of the same pool; 2 threads vs the\n"
      "  2-thread streaming bandwidth (%.1f GB/s; 1 thread %.1f GB/s)\n",
      bw2 / 1e9, bw1 / 1e9);
}

void run_gemm(const Options& opts) {
  std::printf("\nGEMM, 1 thread: GMAC/s (rows x cols x tokens / s)\n");
  std::printf(
      "  block formats: matmul_quantized (dequantize + bf16 GEMM from quant_gemm_min_tokens\n"
      "  on AVX-512 BF16);\n"
      "  'int8': the integer kernel alone, for comparison\n");
  std::printf("%-22s %6s %-5s %-16s %8s\n", "shape", "tokens", "type", "level", "GMAC/s");
  for (const Shape& s : {kShapes[0], kShapes[1], kShapes[2]}) {
    for (int64_t n : opts.tokens) {
      for (WeightType type : kTypes) {
        if (!wanted(opts, type)) continue;
        const Pool pool(s, type, opts.gemm_pool_mib << 20);
        std::unique_ptr<Pool>
            ipool;  // Q4_K / Q5_K / Q6_K / Q8_0 interleaved (kernels/interleave.h)
        std::vector<Variant> variants;
        std::vector<std::unique_ptr<Act>> acts;
        for (const CpuKernels* k : levels(opts)) {
          if (k->level == CpuLevel::kScalar) continue;
          acts.push_back(std::make_unique<Act>(*k, type, s, n));
          Act* a = acts.back().get();
          variants.push_back({level(*k), [&pool, k, a, &s](int64_t i) {
                                matmul(*k, pool.copy(i), a, 0, s.rows);
                              }});
          if (is_block_format(type) && k->level >= CpuLevel::kAvx512) {
            variants.push_back({level(*k) + " int8",
                                [&pool, k, a](int64_t i) { matmul_int8(*k, pool.copy(i), a); }});
          }
          if (can_interleave(type, s.rows, s.cols) && k->interleaved_k) {
            if (ipool == nullptr) {
              ipool = std::make_unique<Pool>(s, type, opts.gemm_pool_mib << 20, "",
                                             WeightLayout::kInterleaved16);
            }
            const Pool* ip = ipool.get();
            variants.push_back({level(*k) + " i16", [ip, k, a, &s](int64_t i) {
                                  matmul(*k, ip->copy(i), a, 0, s.rows);
                                }});
          }
        }
        bench::time_interleaved(&variants, opts.seconds);
        for (const Variant& v : variants) {
          std::printf("%-22s %6lld %-5s %-16s %8.1f\n", s.name, static_cast<long long>(n),
                      std::string(weight_type_name(type)).c_str(), v.label.c_str(),
                      static_cast<double>(s.rows * s.cols * n) / v.best_seconds / 1e9);
        }
      }
    }
  }
}

void run_quantize_x(const Options& opts) {
  std::printf("\nquantize_x, 128 x 1024 values: microseconds\n");
  const int64_t n = 128, cols = 1024;
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_K}) {
    std::vector<uint8_t> out(static_cast<size_t>(n * quantized_x_row_bytes(type, cols)));
    std::vector<Variant> variants;
    for (const CpuKernels* k : levels(opts)) {
      variants.push_back(
          {level(*k), [&, k](int64_t) { k->quantize_x(type, x.data(), n, cols, out.data()); }});
    }
    bench::time_interleaved(&variants, opts.seconds);
    for (const Variant& v : variants) {
      std::printf("%-5s %-11s %8.1f\n", std::string(weight_type_name(type)).c_str(),
                  v.label.c_str(), v.best_seconds * 1e6);
    }
  }
}

int run(int argc, char** argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      opts.seconds = std::atof(argv[++i]);
    } else if (arg == "--pool-mib" && i + 1 < argc) {
      opts.pool_mib = std::atoll(argv[++i]);
    } else if (arg == "--gemm-pool-mib" && i + 1 < argc) {
      opts.gemm_pool_mib = std::atoll(argv[++i]);
      if (opts.gemm_pool_mib < 1) {
        std::fprintf(stderr, "--gemm-pool-mib: expected a size in MiB >= 1, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (arg == "--no-scalar") {
      opts.scalar = false;
    } else if (arg == "--only" && i + 1 < argc) {
      opts.only = argv[++i];
    } else if (arg == "--type" && i + 1 < argc) {
      opts.type = argv[++i];
    } else if (arg == "--mmap" && i + 1 < argc) {
      opts.mmap_file = argv[++i];
    } else if (arg == "--tokens" && i + 1 < argc) {
      // A comma-separated list of positive counts.
      opts.tokens.clear();
      for (const char* p = argv[++i]; *p != '\0';) {
        char* end = nullptr;
        const long long n = std::strtoll(p, &end, 10);
        if (end == p || n <= 0) {
          std::fprintf(stderr, "--tokens: expected counts like 32,64,128, got '%s'\n", argv[i]);
          return 2;
        }
        opts.tokens.push_back(n);
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') {
          std::fprintf(stderr, "--tokens: expected counts like 32,64,128, got '%s'\n", argv[i]);
          return 2;
        }
      }
    } else {
      std::fprintf(stderr,
                   "usage: bench_quant_kernels [--seconds S] [--pool-mib M] [--no-scalar] "
                   "[--only gemv|gemm|quantize_x] [--type q4_K|...] [--mmap FILE] "
                   "[--tokens 32,128] [--gemm-pool-mib M]\n");
      return 2;
    }
  }
  std::printf("CPU level detected: %s\n", std::string(cpu_level_name(detect_cpu_level())).c_str());
  const double bw1 = measure_read_bandwidth_bytes_per_s(int64_t{512} << 20, 1, 1.0);
  const double bw2 = measure_read_bandwidth_bytes_per_s(int64_t{512} << 20, 2, 1.0);
  if (opts.only.empty() || opts.only == "gemv") run_gemv(opts, bw1, bw2);
  if (opts.only.empty() || opts.only == "gemm") run_gemm(opts);
  if (opts.only.empty() || opts.only == "quantize_x") run_quantize_x(opts);
  return 0;
}

}  // namespace
}  // namespace dancemoe::kernels

int main(int argc, char** argv) { return dancemoe::kernels::run(argc, argv); }
