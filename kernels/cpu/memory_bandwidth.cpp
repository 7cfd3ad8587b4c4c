#include "kernels/cpu/memory_bandwidth.h"

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/scalar/scalar_ops.h"
#include "kernels/cpu/simd_tables.h"

namespace dancemoe::kernels {
namespace {

constexpr int64_t kHugePageBytes = int64_t{2} << 20;

StreamReadFn stream_read_for_active_level() {
  const CpuLevel level = active_cpu_level();
  if (level >= CpuLevel::kAvx512) {
    if (StreamReadFn fn = avx512_stream_read()) return fn;
  }
  if (level >= CpuLevel::kAvx2) {
    if (StreamReadFn fn = avx2_stream_read()) return fn;
  }
  return scalar::stream_read;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

double measure_read_bandwidth_bytes_per_s(const ReadBandwidthParams& params) {
  if (params.buffer_bytes < (int64_t{1} << 20) || params.n_threads < 1 || params.min_seconds < 0) {
    return 0.0;
  }
  const int n_threads = params.n_threads;
  // Slices are whole huge pages so each thread's slice starts page-aligned and
  // its length is a multiple of the read loops' 256-byte step.
  const int64_t slice_bytes =
      (params.buffer_bytes / n_threads + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const int64_t total_bytes = slice_bytes * n_threads;
  std::unique_ptr<char, FreeDeleter> buffer(
      static_cast<char*>(std::aligned_alloc(kHugePageBytes, static_cast<size_t>(total_bytes))));
  if (!buffer) return 0.0;
#if defined(MADV_HUGEPAGE)
  // Fewer TLB misses; a hint only, so its failure does not matter.
  madvise(buffer.get(), static_cast<size_t>(total_bytes), MADV_HUGEPAGE);
#endif

  const StreamReadFn read = stream_read_for_active_level();
  std::atomic<bool> stop{false};
  // Every byte read feeds this sum, so no read can be optimised away.
  std::atomic<uint64_t> checksum{0};
  // Two phases per repetition: everyone starts together, everyone finishes.
  std::barrier sync(n_threads + 1);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n_threads));
  for (int i = 0; i < n_threads; ++i) {
    threads.emplace_back([&, i] {
      char* slice = buffer.get() + i * slice_bytes;
      // Touch the pages from the thread that reads them.
      std::memset(slice, i + 1, static_cast<size_t>(slice_bytes));
      uint64_t local = 0;
      while (true) {
        sync.arrive_and_wait();
        if (stop.load()) break;
        local += read(slice, slice_bytes);
        sync.arrive_and_wait();
      }
      checksum.fetch_add(local);
    });
  }

  using Clock = std::chrono::steady_clock;
  double best_seconds = 0.0;
  const Clock::time_point begin = Clock::now();
  for (int repetition = 0;; ++repetition) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
    if (repetition >= 3 && elapsed >= params.min_seconds) break;
    sync.arrive_and_wait();
    const Clock::time_point start = Clock::now();
    sync.arrive_and_wait();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    // The first repetition is a warm-up (TLB, clock frequency).
    if (repetition > 0 && (best_seconds == 0.0 || seconds < best_seconds)) best_seconds = seconds;
  }
  stop.store(true);
  sync.arrive_and_wait();
  for (std::thread& thread : threads) thread.join();
  static std::atomic<uint64_t> last_checksum;
  last_checksum.store(checksum.load(), std::memory_order_relaxed);
  return best_seconds > 0.0 ? static_cast<double>(total_bytes) / best_seconds : 0.0;
}

double measure_read_bandwidth_bytes_per_s(int64_t buffer_bytes, int n_threads, double min_seconds) {
  ReadBandwidthParams params;
  params.buffer_bytes = buffer_bytes;
  params.n_threads = n_threads;
  params.min_seconds = min_seconds;
  return measure_read_bandwidth_bytes_per_s(params);
}

}  // namespace dancemoe::kernels
