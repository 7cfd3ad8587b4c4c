// OffloadCache: experts this node does not hold but had to compute itself
// because no peer holding them answered (DESIGN.md §8): loaded from the
// local model files into a small bounded store, least recently used evicted
// first. It never holds more than its capacity; an expert larger than the
// capacity (or capacity 0: disabled) is resource_exhausted.
//
// Not thread-safe: owned by the executor's thread; the counters are atomics
// so /v1/stats may read them.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>

#include "common/base/status.h"
#include "common/inference/expert_store.h"
#include "common/model/checkpoint.h"

namespace dancemoe::node {

class OffloadCache {
 public:
  OffloadCache(const Checkpoint& checkpoint, uint64_t capacity_bytes);

  Result<std::shared_ptr<const ExpertWeights>> get_or_load(ExpertRef key);

  uint64_t capacity_bytes() const { return capacity_bytes_; }
  uint64_t resident_bytes() const { return store_.resident_bytes(); }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t loads() const { return loads_.load(std::memory_order_relaxed); }

 private:
  ExpertStore store_;
  uint64_t capacity_bytes_;
  std::list<ExpertRef> lru_;  // most recently used first
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> loads_{0};
};

}  // namespace dancemoe::node
