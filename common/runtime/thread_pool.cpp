#include "common/runtime/thread_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>

namespace dancemoe {
namespace {

// How long a worker spins before it sleeps: long enough to bridge the gap
// between two kernels of one token (and one decode token and the next),
// short enough not to hold a core while the owner does other work -- a
// served step's sampling and the HTTP threads it wakes need that core. Timed
// rather than counted: a pause takes ~25 ns on Zen 4 and ~40 ns on Skylake-X
// but a few on older cores, so the 20000 pauses counted before spun ~500 us
// here, the whole of a 16-stream step's sampling (small preset): with 50 us
// that sampling and handover took 400-470 instead of 540-600 us a step
// (bench_batching --preset small, 16 streams, scheduler-side timers, three
// interleaved pairs; tokens/s +6 % on their mean, within this VM's noise).
constexpr std::chrono::microseconds kSpinTime{50};
// Pauses between two looks at the clock (a vDSO call, ~20 ns).
constexpr int kPausesPerClockRead = 32;

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

bool pin_current_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

ThreadPool::ThreadPool(int n_threads, std::vector<int> cpus)
    : n_threads_(std::max(1, n_threads)), cpus_(std::move(cpus)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) {
    workers_.emplace_back([this, i] {
      // A worker that cannot be pinned still works, just unpinned.
      if (!cpus_.empty()) (void)pin_current_thread({cpus_[static_cast<size_t>(i) % cpus_.size()]});
      worker_loop(i);
    });
  }
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(&generation_);
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_erased(Trampoline trampoline, void* ctx, int64_t n_chunks) {
  if (n_chunks <= 0) return;
  if (n_threads_ == 1 || n_chunks == 1) {
    for (int64_t c = 0; c < n_chunks; ++c) trampoline(ctx, c, 0);
    return;
  }
  for (int64_t first = 0; first < n_chunks; first += kMaxChunksPerJob) {
    run_job(trampoline, ctx, first, std::min(kMaxChunksPerJob, n_chunks - first));
  }
}

void ThreadPool::run_job(Trampoline trampoline, void* ctx, int64_t first_chunk, int64_t n_chunks) {
  trampoline_ = trampoline;
  ctx_ = ctx;
  first_chunk_ = first_chunk;
  chunks_done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  claim_word_.store(
      (static_cast<uint64_t>(generation) << 32) | (static_cast<uint64_t>(n_chunks) << 16),
      std::memory_order_release);
  // Sequentially consistent store, then load, paired with the worker's
  // increment of sleepers_ and then its futex_wait (which compares the
  // generation in the kernel): either this load sees the sleeper, or the
  // sleeper's compare sees the new generation and does not sleep.
  generation_.store(generation, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(&generation_);
  work_on(generation, 0);
  while (chunks_done_.load(std::memory_order_acquire) != n_chunks) cpu_relax();
}

void ThreadPool::work_on(uint32_t generation, int thread_idx) {
  uint64_t word = claim_word_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(word >> 32) != generation) return;  // a newer job
    const uint64_t n_chunks = (word >> 16) & 0xffff;
    const uint64_t chunk = word & 0xffff;
    if (chunk >= n_chunks) return;  // all claimed
    if (!claim_word_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
      continue;  // `word` now holds the current value
    }
    // The claim succeeded against this job's own word, so the owner is still
    // waiting for this chunk and the job fields are those of `generation`.
    trampoline_(ctx_, first_chunk_ + static_cast<int64_t>(chunk), thread_idx);
    chunks_done_.fetch_add(1, std::memory_order_acq_rel);
    word = claim_word_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop(int thread_idx) {
  // The baseline is the generation at construction, not whatever the counter
  // holds when this thread gets scheduled: a job may already be running.
  uint32_t seen = 0;
  for (;;) {
    const auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
    int spins = 0;
    uint32_t now;
    while ((now = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins % kPausesPerClockRead != 0 || std::chrono::steady_clock::now() < spin_until) {
        cpu_relax();
      } else {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        futex_wait(&generation_, seen);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
      }
    }
    seen = now;
    if (stopping_.load(std::memory_order_acquire)) return;
    work_on(now, thread_idx);
  }
}

Range split_range(int64_t n, int64_t idx, int64_t n_parts, int64_t align) {
  if (align < 1) align = 1;
  const int64_t n_blocks = (n + align - 1) / align;
  const int64_t per = n_blocks / n_parts;
  const int64_t extra = n_blocks % n_parts;
  const int64_t begin_block = idx * per + std::min<int64_t>(idx, extra);
  const int64_t end_block = begin_block + per + (idx < extra ? 1 : 0);
  return {std::min(n, begin_block * align), std::min(n, end_block * align)};
}

int64_t chunk_count(int64_t n, int64_t rows_per_chunk, int n_threads) {
  if (n <= 0) return 0;
  const int64_t by_size = (n + rows_per_chunk - 1) / rows_per_chunk;
  return std::max<int64_t>(1, std::min(n, std::max<int64_t>(by_size, 2 * n_threads)));
}

}  // namespace dancemoe
