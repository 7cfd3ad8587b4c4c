// KvCache: the keys and values of one sequence, per layer:
//   keys:   [n_layers][capacity, key_dim]
//   values: [n_layers][capacity, value_dim]
// in f32 or bf16 (KvElement). Grouped attention keeps k and v (key_dim ==
// value_dim == kv_dim); latent attention (MLA) keeps one compressed row per
// position as its "key" (the normalised latent and the rotated shared rope
// key) and no values.
// A CPU cache's memory comes from an anonymous mapping, so only the positions
// actually used become resident. A backend that computes elsewhere (a GPU)
// makes caches whose storage lives there: external_storage() is then its
// handle and the row accessors are null. Make caches with
// Transformer::new_cache, which asks the model's backend. Owned by one
// sequence; not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "common/base/status.h"
#include "common/model/model_config.h"
#include "common/tensor/host_buffer.h"

namespace dancemoe {

// What a host cache stores (--kv-type). bf16 halves the cache's memory (twice
// the sequences or context in a KV budget, twice the prefix cache's history)
// and the bytes attention reads per token, at the price of rounding every
// cached k and v to 8 significant bits; f32, the default, keeps the logits
// exactly what the weights and activations give (measured in
// docs/node/README.md: the quantization agreement target moves with it).
enum class KvElement { kF32, kBF16 };

int64_t kv_element_bytes(KvElement element);
std::string_view kv_element_name(KvElement element);
std::optional<KvElement> parse_kv_element(std::string_view text);

// The element a CPU forward keeps its caches in when `requested`: as asked
// for grouped attention; f32 for latent attention (MLA), whose few compressed
// rows feed a second projection.
KvElement host_kv_element(const ModelConfig& config, KvElement requested);

// Bytes one position of such a cache takes over all layers (KV budgets).
int64_t host_kv_bytes_per_position(const ModelConfig& config, KvElement requested);

class KvCache {
 public:
  // Storage owned by a backend; destroyed with the cache.
  class ExternalStorage {
   public:
    virtual ~ExternalStorage() = default;
  };

  static Result<KvCache> create(int64_t n_layers, int64_t key_dim, int64_t value_dim,
                                int64_t capacity, KvElement element = KvElement::kF32);
  static Result<KvCache> create(int64_t n_layers, int64_t kv_dim, int64_t capacity) {
    return create(n_layers, kv_dim, kv_dim, capacity);
  }
  // A cache whose storage a backend keeps (widths as in create()).
  static KvCache external(int64_t n_layers, int64_t key_dim, int64_t value_dim, int64_t capacity,
                          std::unique_ptr<ExternalStorage> storage);
  static KvCache external(int64_t n_layers, int64_t kv_dim, int64_t capacity,
                          std::unique_ptr<ExternalStorage> storage) {
    return external(n_layers, kv_dim, kv_dim, capacity, std::move(storage));
  }

  int64_t capacity() const { return capacity_; }
  int64_t n_layers() const { return n_layers_; }
  KvElement element() const { return element_; }
  // Bytes one position takes over all layers (a host cache's resident cost).
  int64_t bytes_per_position() const {
    return n_layers_ * (key_dim_ + value_dim_) * kv_element_bytes(element_);
  }
  // Copies the first n positions of `source` (same layers, widths and
  // element, both host caches) into this cache and sets n_past() to n
  // (prefix reuse).
  Status copy_prefix(const KvCache& source, int64_t n);
  int64_t kv_dim() const { return key_dim_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t value_dim() const { return value_dim_; }
  // Positions already filled (the next token goes at n_past()).
  int64_t n_past() const { return n_past_; }
  void set_n_past(int64_t n) { n_past_ = n; }
  void clear() { n_past_ = 0; }

  // A layer's rows in the cache's element: null for the other element, for
  // an external cache, and (values) without values (value_dim 0).
  float* keys(int64_t layer) { return rows<float>(KvElement::kF32, layer, 0, key_dim_); }
  float* values(int64_t layer) { return rows<float>(KvElement::kF32, layer, 1, value_dim_); }
  uint16_t* keys_bf16(int64_t layer) {
    return rows<uint16_t>(KvElement::kBF16, layer, 0, key_dim_);
  }
  uint16_t* values_bf16(int64_t layer) {
    return rows<uint16_t>(KvElement::kBF16, layer, 1, value_dim_);
  }
  ExternalStorage* external_storage() const { return external_.get(); }

 private:
  // Byte offset of layer `layer`'s keys (part 0) or values (part 1).
  int64_t offset(int64_t layer, int part) const {
    return (layer * capacity_ * (key_dim_ + value_dim_) + part * capacity_ * key_dim_) *
           kv_element_bytes(element_);
  }
  template <class T>
  T* rows(KvElement want, int64_t layer, int part, int64_t width) {
    if (external_ || element_ != want || width == 0) return nullptr;
    return reinterpret_cast<T*>(static_cast<uint8_t*>(storage_.data()) + offset(layer, part));
  }

  HostBuffer storage_;
  std::unique_ptr<ExternalStorage> external_;
  KvElement element_ = KvElement::kF32;
  int64_t n_layers_ = 0;
  int64_t key_dim_ = 0;
  int64_t value_dim_ = 0;
  int64_t capacity_ = 0;
  int64_t n_past_ = 0;
};

}  // namespace dancemoe
