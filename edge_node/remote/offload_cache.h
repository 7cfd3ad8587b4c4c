// OffloadCache: experts this node does not hold but computes itself -- when
// no peer holding them answered (DESIGN.md §8), or when fetching their
// weights costs less than sending a long prompt's tokens (weight gathering,
// edge_node/moe/weight_gathering.h) -- in a small bounded store, least
// recently used evicted first. An expert comes from this node's model files
// when it has them, else (with a fetcher) from the peers given, checked
// against the model's digests (expert_fetcher.h). It never holds more than
// its capacity; an expert larger than the capacity (or capacity 0:
// disabled) is resource_exhausted.
//
// Not thread-safe: owned by the executor's thread; the counters are atomics
// so /v1/stats and /metrics may read them.
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "common/base/status.h"
#include "common/inference/expert_store.h"
#include "common/model/checkpoint.h"
#include "edge_node/migration/expert_fetcher.h"

namespace dancemoe::node {

class OffloadCache {
 public:
  // `fetcher` may be null: experts come from the local files only.
  OffloadCache(const Checkpoint& checkpoint, uint64_t capacity_bytes,
               std::unique_ptr<ExpertFetcher> fetcher = nullptr);

  // The expert from the cache, else from this node's files, else fetched
  // from `sources` in order (the first that delivers it intact).
  Result<std::shared_ptr<const ExpertWeights>> get_or_load(
      ExpertRef key, const std::vector<PeerInfo>& sources = {});

  bool contains(ExpertRef key) const { return store_.is_resident(key); }
  // Bytes of the expert as this cache holds it (stored format).
  uint64_t expert_bytes(ExpertRef key) const { return store_.expert_bytes(key); }
  bool can_fetch() const { return fetcher_ != nullptr; }

  uint64_t capacity_bytes() const { return capacity_bytes_; }
  uint64_t resident_bytes() const { return store_.resident_bytes(); }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t loads() const { return loads_.load(std::memory_order_relaxed); }
  uint64_t fetches() const { return fetches_.load(std::memory_order_relaxed); }
  uint64_t fetched_bytes() const { return fetched_bytes_.load(std::memory_order_relaxed); }

 private:
  Status make_room(uint64_t need);

  ExpertStore store_;
  uint64_t capacity_bytes_;
  std::unique_ptr<ExpertFetcher> fetcher_;
  std::list<ExpertRef> lru_;  // most recently used first
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> loads_{0};
  std::atomic<uint64_t> fetches_{0};
  std::atomic<uint64_t> fetched_bytes_{0};
};

}  // namespace dancemoe::node
