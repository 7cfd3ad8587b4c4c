#include "edge_node/remote/offload_cache.h"

namespace dancemoe::node {

OffloadCache::OffloadCache(const Checkpoint& checkpoint, uint64_t capacity_bytes,
                           std::unique_ptr<ExpertFetcher> fetcher)
    : store_(checkpoint), capacity_bytes_(capacity_bytes), fetcher_(std::move(fetcher)) {}

Status OffloadCache::make_room(uint64_t need) {
  while (!lru_.empty() && store_.resident_bytes() + need > capacity_bytes_) {
    store_.evict(lru_.back());
    lru_.pop_back();
  }
  return Status::ok();
}

Result<std::shared_ptr<const ExpertWeights>> OffloadCache::get_or_load(
    ExpertRef key, const std::vector<PeerInfo>& sources) {
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
  DMOE_RETURN_IF_ERROR(make_room(need));
  const Checkpoint& checkpoint = store_.checkpoint();
  Status loaded = unavailable("not on this node's disk");
  if (checkpoint.has_expert_weights(key)) loaded = store_.load(key);
  if (!loaded.is_ok() && fetcher_ != nullptr && !sources.empty()) {
    const ExpertManifest* digests = checkpoint.expert_digests();
    Result<std::vector<uint8_t>> bytes =
        fetcher_->fetch(key, need, sources, digests ? digests->find(key) : nullptr);
    if (!bytes.is_ok()) {
      return bytes.status().with_context("offload cache: local files: " + loaded.message());
    }
    DMOE_RETURN_IF_ERROR(store_.install(key, *bytes).with_context("offload cache"));
    fetches_.fetch_add(1, std::memory_order_relaxed);
    fetched_bytes_.fetch_add(bytes->size(), std::memory_order_relaxed);
    loaded = Status::ok();
  }
  DMOE_RETURN_IF_ERROR(loaded.with_context("offload cache"));
  lru_.push_front(key);
  loads_.fetch_add(1, std::memory_order_relaxed);
  return store_.get(key);
}

}  // namespace dancemoe::node
