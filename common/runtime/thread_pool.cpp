#include "common/runtime/thread_pool.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

namespace dancemoe {
namespace {

// About 20-50 us of spinning before a worker sleeps: long enough to bridge
// the gap between two kernels of one token, short enough not to burn a core
// between tokens.
constexpr int kSpinIterations = 20000;

// Direct futex calls on the generation word rather than std::atomic::wait,
// whose libstdc++ 12 implementation adds its own spinning and a shared
// waiter table: here the spin policy is ours, and a wait costs exactly one
// syscall that compares and sleeps atomically in the kernel.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(&generation_);
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_erased(Trampoline trampoline, void* ctx) {
  if (n_threads_ == 1) {
    trampoline(ctx, 0, 1);
    return;
  }
  trampoline_ = trampoline;
  ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  futex_wake_all(&generation_);
  trampoline(ctx, 0, n_threads_);
  while (pending_.load(std::memory_order_acquire) != 0) cpu_relax();
}

void ThreadPool::worker_loop(int thread_idx) {
  // The baseline is the generation at construction, not whatever the counter
  // holds when this thread gets scheduled: run() may already have bumped it.
  uint32_t seen = 0;
  for (;;) {
    int spins = 0;
    uint32_t now;
    while ((now = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        cpu_relax();
      } else {
        futex_wait(&generation_, seen);
      }
    }
    seen = now;
    if (stopping_.load(std::memory_order_acquire)) return;
    trampoline_(ctx_, thread_idx, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

Range split_range(int64_t n, int idx, int n_threads, int64_t align) {
  if (align < 1) align = 1;
  const int64_t n_blocks = (n + align - 1) / align;
  const int64_t per = n_blocks / n_threads;
  const int64_t extra = n_blocks % n_threads;
  const int64_t begin_block = idx * per + std::min<int64_t>(idx, extra);
  const int64_t end_block = begin_block + per + (idx < extra ? 1 : 0);
  return {std::min(n, begin_block * align), std::min(n, end_block * align)};
}

}  // namespace dancemoe
