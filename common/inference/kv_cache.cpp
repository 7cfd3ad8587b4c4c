#include "common/inference/kv_cache.h"

#include <cstring>
#include <string>

namespace dancemoe {

int64_t kv_element_bytes(KvElement element) {
  return element == KvElement::kBF16 ? int64_t{2} : int64_t{4};
}

std::string_view kv_element_name(KvElement element) {
  return element == KvElement::kBF16 ? "bf16" : "f32";
}

std::optional<KvElement> parse_kv_element(std::string_view text) {
  if (text == "f32") return KvElement::kF32;
  if (text == "bf16") return KvElement::kBF16;
  return std::nullopt;
}

KvElement host_kv_element(const ModelConfig& config, KvElement requested) {
  return config.attention == AttentionKind::kLatent ? KvElement::kF32 : requested;
}

int64_t host_kv_bytes_per_position(const ModelConfig& config, KvElement requested) {
  return config.n_layers * (config.cache_key_dim() + config.cache_value_dim()) *
         kv_element_bytes(host_kv_element(config, requested));
}

Result<KvCache> KvCache::create(int64_t n_layers, int64_t key_dim, int64_t value_dim,
                                int64_t capacity, KvElement element) {
  if (n_layers <= 0 || key_dim <= 0 || value_dim < 0 || capacity <= 0) {
    return invalid_argument("KV cache needs positive layers, width and capacity");
  }
  KvCache cache;
  cache.n_layers_ = n_layers;
  cache.key_dim_ = key_dim;
  cache.value_dim_ = value_dim;
  cache.capacity_ = capacity;
  cache.element_ = element;
  const uint64_t bytes = static_cast<uint64_t>(n_layers) * static_cast<uint64_t>(capacity) *
                         static_cast<uint64_t>(key_dim + value_dim) *
                         static_cast<uint64_t>(kv_element_bytes(element));
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
      source.value_dim_ != value_dim_ || source.element_ != element_) {
    return invalid_argument("copy_prefix: the caches have different shapes or elements");
  }
  if (n < 0 || n > source.n_past_ || n > capacity_) {
    return invalid_argument("copy_prefix: " + std::to_string(n) + " positions but the source has " +
                            std::to_string(source.n_past_) + " and the capacity is " +
                            std::to_string(capacity_));
  }
  const int64_t element_bytes = kv_element_bytes(element_);
  const auto key_bytes = static_cast<size_t>(n * key_dim_ * element_bytes);
  const auto value_bytes = static_cast<size_t>(n * value_dim_ * element_bytes);
  auto* to = static_cast<uint8_t*>(storage_.data());
  const auto* from = static_cast<const uint8_t*>(source.storage_.data());
  for (int64_t layer = 0; layer < n_layers_; ++layer) {
    std::memcpy(to + offset(layer, 0), from + source.offset(layer, 0), key_bytes);
    if (value_dim_ > 0) {
      std::memcpy(to + offset(layer, 1), from + source.offset(layer, 1), value_bytes);
    }
  }
  n_past_ = n;
  return Status::ok();
}

}  // namespace dancemoe
