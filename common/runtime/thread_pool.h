// ThreadPool: a fixed set of persistent worker threads for data-parallel
// kernels (matmul rows, attention heads). The calling thread takes part, so
// a pool of n threads starts n - 1 workers.
//
// parallel_for(n_chunks, fn) runs fn(chunk, thread_idx) for every chunk in
// [0, n_chunks). Chunks are claimed dynamically from a shared counter, so a
// worker the OS has descheduled (another process on the core) costs only
// the chunk it holds: the other threads take the rest, and a pool on a busy
// machine degrades to single-thread speed instead of waiting. There is no
// per-call thread start-up: workers spin ~50 us on a generation counter and
// then sleep on it (futex; a wake costs ~5 us), so back-to-back calls on the
// token path cost well under a microsecond, while a pool whose owner is busy
// elsewhere (sampling a served step) or idle leaves the cores to others.
//
// Which thread runs a chunk is not deterministic, so chunks must write
// disjoint outputs; results then do not depend on the thread count.
// parallel_for may be called from one thread at a time (the pool's owner),
// and fn must not call it on the same pool.
//
// A pool may be pinned to a set of CPUs (a device's cores, a NUMA node):
// worker i runs on cpus[i % cpus.size()] only; the calling thread is not
// touched (pin it with pin_current_thread when it belongs to the set).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace dancemoe {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads, std::vector<int> cpus = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  const std::vector<int>& cpus() const { return cpus_; }

  template <typename Fn>
  void parallel_for(int64_t n_chunks, Fn&& fn) {
    using Callable = std::remove_reference_t<Fn>;
    run_erased([](void* ctx, int64_t chunk,
                  int thread_idx) { (*static_cast<Callable*>(ctx))(chunk, thread_idx); },
               const_cast<void*>(static_cast<const void*>(&fn)), n_chunks);
  }

 private:
  using Trampoline = void (*)(void* ctx, int64_t chunk, int thread_idx);
  int64_t first_chunk_ = 0;  // chunk index offset of the current job

  // Largest chunk count one job can carry in claim_word_; parallel_for
  // splits bigger requests into several jobs.
  static constexpr int64_t kMaxChunksPerJob = 0xffff;

  void run_erased(Trampoline trampoline, void* ctx, int64_t n_chunks);
  void run_job(Trampoline trampoline, void* ctx, int64_t first_chunk, int64_t n_chunks);
  // Claims and runs chunks of generation `generation` until none is left.
  void work_on(uint32_t generation, int thread_idx);
  void worker_loop(int thread_idx);

  int n_threads_;
  std::vector<int> cpus_;
  std::vector<std::thread> workers_;
  // The current job; written by the owner before it publishes a generation,
  // stable until every chunk of that generation is done.
  Trampoline trampoline_ = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<uint32_t> generation_{0};  // futex word
  // Workers asleep (or about to be) on generation_: a job wakes them with a
  // syscall only when there is one -- a worker still spinning sees the new
  // generation by itself, and the wake cost a syscall per job (~90 per
  // small-preset step).
  std::atomic<int> sleepers_{0};
  // One word holds everything a claim depends on -- generation (high 32
  // bits), chunk count (16 bits) and next unclaimed chunk (low 16 bits) -- so
  // a claim (compare-and-swap) succeeds only against a consistent snapshot of
  // the job it was meant for: a late worker can never claim a chunk of a
  // newer job, nor an index past an older job's end.
  alignas(64) std::atomic<uint64_t> claim_word_{0};
  alignas(64) std::atomic<int64_t> chunks_done_{0};
  std::atomic<bool> stopping_{false};
};

// Restricts the calling thread to `cpus` (no-op when empty). Returns false
// when the kernel refused (a CPU outside the process's allowed set).
bool pin_current_thread(const std::vector<int>& cpus);

// The half-open range [begin, end) of `n` items that part `idx` of `n_parts`
// covers, with boundaries rounded to multiples of `align` (the last range
// takes the remainder).
struct Range {
  int64_t begin;
  int64_t end;
};
Range split_range(int64_t n, int64_t idx, int64_t n_parts, int64_t align = 1);

// How many chunks to cut `n` rows into: about `rows_per_chunk` rows each, at
// least enough for every thread to get two.
int64_t chunk_count(int64_t n, int64_t rows_per_chunk, int n_threads);

}  // namespace dancemoe
