// PrefixCache: the KV of finished sequences kept for reuse by later ones
// that start with the same tokens (a system prompt, the history of a chat).
// restore() finds the entry with the longest common prefix with a new
// prompt and copies that many positions into the new sequence's cache, so
// only the rest of the prompt is prefilled. Entries are compact copies
// (capacity = their length) or finished sequences' caches taken over whole,
// bounded by a byte budget (of their capacity); the least recently used go
// first. Hits, misses, saved tokens and evictions are counted for
// /metrics.
//
// The keys and values of a position depend only on the tokens before it, so
// a restored prefix holds what a cold prefill would compute (up to the
// rounding of a different prefill chunking). Host caches only (a backend
// whose caches live on a device does not use it).
// Thread-safe (one mutex: the scheduler uses it, /metrics reads stats()).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <span>
#include <vector>

#include "common/base/status.h"
#include "common/inference/kv_cache.h"

namespace dancemoe {

class PrefixCache {
 public:
  struct Stats {
    uint64_t hits = 0;          // restores that reused a prefix
    uint64_t misses = 0;        // restores that found none long enough
    uint64_t saved_tokens = 0;  // positions restored instead of computed
    uint64_t evictions = 0;
    uint64_t entries = 0;
    int64_t bytes = 0;
    int64_t budget_bytes = 0;
  };
  using CacheMaker = std::function<Result<KvCache>(int64_t capacity)>;

  // `budget_bytes` <= 0 disables the cache. Prefixes shorter than
  // `min_tokens` are not worth a restore (every prompt shares its BOS).
  PrefixCache(int64_t budget_bytes, int64_t min_tokens, CacheMaker make);

  // Copies the longest cached prefix of `tokens`, at most `max_tokens` long,
  // into `into` (which must be empty) and returns its length; 0 on a miss.
  int64_t restore(std::span<const int32_t> tokens, int64_t max_tokens, KvCache& into);
  // Keeps the first cache.n_past() positions of `cache`, whose tokens are
  // tokens[0 .. cache.n_past()), as a compact copy. Errors (no memory) only
  // skip the insert.
  void insert(std::span<const int32_t> tokens, const KvCache& cache);
  // The same for a cache its sequence is done with: kept as it is, without a
  // copy, when at least kAdoptFill of its capacity is used (a finished
  // request's reservation usually is: the copy, memory-bound, was the
  // larger part of an insert) and it is at most kAdoptMaxBytes; copied as
  // above otherwise. A large cache kept whole leaves the next long prompt to
  // fault in memory the process never touched, which on a VM can cost the
  // host's fault too: restoring a 3.8k-token chat history (30 MB, small
  // preset) took 65 ms into such memory against 4 ms into recycled memory,
  // and the second turn's TTFT went 30 -> 90 ms. Copied, the finished
  // sequence's own cache is freed and reused for the next one.
  void insert(std::span<const int32_t> tokens, KvCache&& cache);
  static constexpr double kAdoptFill = 0.75;
  static constexpr int64_t kAdoptMaxBytes = int64_t{8} << 20;
  void clear();
  Stats stats() const;

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    KvCache cache;
    int64_t bytes = 0;
  };
  void evict_until(int64_t room);
  // The tokens to keep for a cache of n_past() positions, or empty when
  // there is nothing to insert (too short, already covered); drops the
  // entries the new one extends. mutex_ held.
  std::span<const int32_t> prepare_locked(std::span<const int32_t> tokens, const KvCache& cache);
  void push_locked(std::span<const int32_t> kept, KvCache cache);

  const int64_t budget_bytes_;
  const int64_t min_tokens_;
  CacheMaker make_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  Stats stats_;
};

}  // namespace dancemoe
