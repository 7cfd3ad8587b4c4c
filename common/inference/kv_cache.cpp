#include "common/inference/kv_cache.h"

namespace dancemoe {

Result<KvCache> KvCache::create(int64_t n_layers, int64_t key_dim, int64_t value_dim,
                                int64_t capacity) {
  if (n_layers <= 0 || key_dim <= 0 || value_dim < 0 || capacity <= 0) {
    return invalid_argument("KV cache needs positive layers, width and capacity");
  }
  KvCache cache;
  cache.n_layers_ = n_layers;
  cache.key_dim_ = key_dim;
  cache.value_dim_ = value_dim;
  cache.capacity_ = capacity;
  const uint64_t bytes = static_cast<uint64_t>(n_layers) * static_cast<uint64_t>(capacity) *
                         static_cast<uint64_t>(key_dim + value_dim) * sizeof(float);
  DMOE_ASSIGN_OR_RETURN(cache.storage_, HostBuffer::allocate(bytes));
  return cache;
}

KvCache KvCache::external(int64_t n_layers, int64_t kv_dim, int64_t capacity,
                          std::unique_ptr<ExternalStorage> storage) {
  KvCache cache;
  cache.n_layers_ = n_layers;
  cache.key_dim_ = kv_dim;
  cache.value_dim_ = kv_dim;
  cache.capacity_ = capacity;
  cache.external_ = std::move(storage);
  return cache;
}

}  // namespace dancemoe
