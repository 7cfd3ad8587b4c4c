#include "edge_node/remote/offload_cache.h"

namespace dancemoe::node {

OffloadCache::OffloadCache(const Checkpoint& checkpoint, uint64_t capacity_bytes)
    : store_(checkpoint), capacity_bytes_(capacity_bytes) {}

Result<std::shared_ptr<const ExpertWeights>> OffloadCache::get_or_load(ExpertRef key) {
  DMOE_RETURN_IF_ERROR(store_.check_key(key));
  if (std::shared_ptr<const ExpertWeights> w = store_.get(key)) {
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (*it == key) {
        lru_.splice(lru_.begin(), lru_, it);
        break;
      }
    }
    hits_.fetch_add(1, std::memory_order_relaxed);
    return w;
  }
  const uint64_t need = store_.expert_bytes(key);
  if (need > capacity_bytes_) {
    return resource_exhausted("the offload cache (" + std::to_string(capacity_bytes_) +
                              " bytes, --offload-cache) cannot hold expert " +
                              std::to_string(key.expert) + " of layer " +
                              std::to_string(key.layer) + " (" + std::to_string(need) + " bytes)");
  }
  while (!lru_.empty() && store_.resident_bytes() + need > capacity_bytes_) {
    store_.evict(lru_.back());
    lru_.pop_back();
  }
  DMOE_RETURN_IF_ERROR(store_.load(key).with_context("offload cache"));
  lru_.push_front(key);
  loads_.fetch_add(1, std::memory_order_relaxed);
  return store_.get(key);
}

}  // namespace dancemoe::node
