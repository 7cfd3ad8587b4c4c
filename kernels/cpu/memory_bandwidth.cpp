#include "kernels/cpu/memory_bandwidth.h"

#include <algorithm>
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

using Clock = std::chrono::steady_clock;

constexpr int64_t kHugePageBytes = int64_t{2} << 20;
constexpr int64_t kChunkBytes = int64_t{16} << 20;

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

// One thread's part of a repetition; written by that thread between the two
// barriers of the repetition, read by the coordinator after the second.
struct Span {
  Clock::time_point start;
  Clock::time_point end;
};

}  // namespace

uint64_t read_once(const void* data, int64_t n_bytes) {
  return stream_read_for_active_level()(data, n_bytes / 256 * 256);
}

double measure_read_bandwidth_bytes_per_s(const ReadBandwidthParams& params) {
  if (params.n_threads < 1 || params.buffer_bytes < (int64_t{1} << 20) * params.n_threads ||
      params.min_seconds < 0) {
    return 0.0;
  }
  const int n_threads = params.n_threads;
  // Slices are whole huge pages, so each starts page-aligned and every chunk
  // is a multiple of the read loops' 256-byte step.
  const int64_t slice_bytes =
      (params.buffer_bytes / n_threads + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const int64_t chunk_bytes =
      params.sustained || slice_bytes < kChunkBytes ? slice_bytes : kChunkBytes;
  const int64_t n_chunks = slice_bytes / chunk_bytes;
  const int64_t total_bytes = slice_bytes * n_threads;
  std::unique_ptr<char, FreeDeleter> buffer(
      static_cast<char*>(std::aligned_alloc(kHugePageBytes, static_cast<size_t>(total_bytes))));
  if (!buffer) return 0.0;
#if defined(MADV_HUGEPAGE)
  // Fewer TLB misses; a hint only, so its failure does not matter.
  madvise(buffer.get(), static_cast<size_t>(total_bytes), MADV_HUGEPAGE);
#endif

  const StreamReadFn read = stream_read_for_active_level();
  std::vector<Span> spans(static_cast<size_t>(n_threads));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> repetition{0};
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
        const int64_t chunk = repetition.load() % n_chunks;
        Span& span = spans[static_cast<size_t>(i)];
        span.start = Clock::now();
        local += read(slice + chunk * chunk_bytes, chunk_bytes);
        span.end = Clock::now();
        sync.arrive_and_wait();
      }
      checksum.fetch_add(local);
    });
  }

  double best_seconds = 0.0;
  std::vector<double> all_seconds;
  const Clock::time_point begin = Clock::now();
  for (int64_t rep = 0;; ++rep) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - begin).count();
    if (rep >= 5 && elapsed >= params.min_seconds) break;
    repetition.store(rep);
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    Clock::time_point first_start = spans[0].start;
    Clock::time_point last_end = spans[0].end;
    for (const Span& span : spans) {
      first_start = span.start < first_start ? span.start : first_start;
      last_end = span.end > last_end ? span.end : last_end;
    }
    const double seconds = std::chrono::duration<double>(last_end - first_start).count();
    // The first repetition is a warm-up (TLB, clock frequency).
    if (rep > 0 && (best_seconds == 0.0 || seconds < best_seconds)) best_seconds = seconds;
    if (rep > 0) all_seconds.push_back(seconds);
  }
  stop.store(true);
  sync.arrive_and_wait();
  for (std::thread& thread : threads) thread.join();
  static std::atomic<uint64_t> last_checksum;
  last_checksum.store(checksum.load(), std::memory_order_relaxed);
  double seconds = best_seconds;
  if (params.sustained && !all_seconds.empty()) {
    std::nth_element(all_seconds.begin(), all_seconds.begin() + all_seconds.size() / 2,
                     all_seconds.end());
    seconds = all_seconds[all_seconds.size() / 2];
  }
  return seconds > 0.0 ? static_cast<double>(chunk_bytes * n_threads) / seconds : 0.0;
}

double measure_read_bandwidth_bytes_per_s(int64_t buffer_bytes, int n_threads, double min_seconds) {
  ReadBandwidthParams params;
  params.buffer_bytes = buffer_bytes;
  params.n_threads = n_threads;
  params.min_seconds = min_seconds;
  return measure_read_bandwidth_bytes_per_s(params);
}

double measure_sustained_read_bandwidth_bytes_per_s(int64_t buffer_bytes, int n_threads,
                                                    double min_seconds) {
  ReadBandwidthParams params;
  params.buffer_bytes = buffer_bytes;
  params.n_threads = n_threads;
  params.min_seconds = min_seconds;
  params.sustained = true;
  return measure_read_bandwidth_bytes_per_s(params);
}

}  // namespace dancemoe::kernels
