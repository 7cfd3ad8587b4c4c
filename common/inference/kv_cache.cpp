#include "common/inference/kv_cache.h"

#include <cstring>
#include <string>

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

KvCache KvCache::external(int64_t n_layers, int64_t key_dim, int64_t value_dim, int64_t capacity,
                          std::unique_ptr<ExternalStorage> storage) {
  KvCache cache;
  cache.n_layers_ = n_layers;
  cache.key_dim_ = key_dim;
  cache.value_dim_ = value_dim;
  cache.capacity_ = capacity;
  cache.external_ = std::move(storage);
  return cache;
}

Status KvCache::copy_prefix(const KvCache& source, int64_t n) {
  if (external_ || source.external_) {
    return failed_precondition("copy_prefix: only host KV caches can be copied");
  }
  if (source.n_layers_ != n_layers_ || source.key_dim_ != key_dim_ ||
      source.value_dim_ != value_dim_) {
    return invalid_argument("copy_prefix: the caches have different shapes");
  }
  if (n < 0 || n > source.n_past_ || n > capacity_) {
    return invalid_argument("copy_prefix: " + std::to_string(n) + " positions but the source has " +
                            std::to_string(source.n_past_) + " and the capacity is " +
                            std::to_string(capacity_));
  }
  const auto key_bytes = static_cast<size_t>(n * key_dim_) * sizeof(float);
  const auto value_bytes = static_cast<size_t>(n * value_dim_) * sizeof(float);
  for (int64_t layer = 0; layer < n_layers_; ++layer) {
    std::memcpy(layer_base(layer), source.layer_base(layer), key_bytes);
    if (value_dim_ > 0) {
      std::memcpy(layer_base(layer) + capacity_ * key_dim_,
                  source.layer_base(layer) + source.capacity_ * key_dim_, value_bytes);
    }
  }
  n_past_ = n;
  return Status::ok();
}

}  // namespace dancemoe
