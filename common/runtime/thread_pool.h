// ThreadPool: a fixed set of persistent worker threads that run one
// function on every thread at once, for data-parallel kernels (matmul rows,
// attention heads). The calling thread takes part as thread 0, so a pool of
// n threads starts n - 1 workers. There is no per-call thread start-up:
// workers spin briefly on a generation counter and then sleep on it
// (a futex), so back-to-back calls on the token path cost well
// under a microsecond while an idle pool costs no CPU.
//
// run() may be called from one thread at a time (the pool's owner); the
// function must not call run() on the same pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace dancemoe {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_idx, n_threads) once on each thread and returns when all are done.
  template <typename Fn>
  void run(Fn&& fn) {
    using Callable = std::remove_reference_t<Fn>;
    run_erased([](void* ctx, int idx, int n) { (*static_cast<Callable*>(ctx))(idx, n); },
               const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using Trampoline = void (*)(void* ctx, int thread_idx, int n_threads);

  void run_erased(Trampoline trampoline, void* ctx);
  void worker_loop(int thread_idx);

  int n_threads_;
  std::vector<std::thread> workers_;
  Trampoline trampoline_ = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<uint32_t> generation_{0};  // futex word
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<bool> stopping_{false};
};

// The half-open range [begin, end) of `n` items that thread `idx` of `n_threads`
// handles, with boundaries rounded to multiples of `align` (the last range
// takes the remainder).
struct Range {
  int64_t begin;
  int64_t end;
};
Range split_range(int64_t n, int idx, int n_threads, int64_t align = 1);

}  // namespace dancemoe
