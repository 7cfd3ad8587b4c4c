// KvCache: the keys and values of one sequence, per layer, in f32:
//   keys:   [n_layers][capacity, key_dim]
//   values: [n_layers][capacity, value_dim]
// Grouped attention keeps k and v (key_dim == value_dim == kv_dim); latent
// attention (MLA) keeps one compressed row per position as its "key" (the
// normalised latent and the rotated shared rope key) and no values.
// A CPU cache's memory comes from an anonymous mapping, so only the positions
// actually used become resident. A backend that computes elsewhere (a GPU)
// makes caches whose storage lives there: external_storage() is then its
// handle and keys()/values() are null. Make caches with
// Transformer::new_cache, which asks the model's backend. Owned by one
// sequence; not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "common/base/status.h"
#include "common/tensor/host_buffer.h"

namespace dancemoe {

class KvCache {
 public:
  // Storage owned by a backend; destroyed with the cache.
  class ExternalStorage {
   public:
    virtual ~ExternalStorage() = default;
  };

  static Result<KvCache> create(int64_t n_layers, int64_t key_dim, int64_t value_dim,
                                int64_t capacity);
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
  // Bytes one position takes over all layers (a host cache's resident cost).
  int64_t bytes_per_position() const {
    return n_layers_ * (key_dim_ + value_dim_) * static_cast<int64_t>(sizeof(float));
  }
  // Copies the first n positions of `source` (same layers and widths, both
  // host caches) into this cache and sets n_past() to n (prefix reuse).
  Status copy_prefix(const KvCache& source, int64_t n);
  int64_t kv_dim() const { return key_dim_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t value_dim() const { return value_dim_; }
  // Positions already filled (the next token goes at n_past()).
  int64_t n_past() const { return n_past_; }
  void set_n_past(int64_t n) { n_past_ = n; }
  void clear() { n_past_ = 0; }

  float* keys(int64_t layer) { return external_ ? nullptr : layer_base(layer); }
  // Null without values (value_dim 0) or for an external cache.
  float* values(int64_t layer) {
    return external_ || value_dim_ == 0 ? nullptr : layer_base(layer) + capacity_ * key_dim_;
  }
  ExternalStorage* external_storage() const { return external_.get(); }

 private:
  float* layer_base(int64_t layer) {
    return static_cast<float*>(storage_.data()) + layer * capacity_ * (key_dim_ + value_dim_);
  }
  const float* layer_base(int64_t layer) const {
    return static_cast<const float*>(storage_.data()) + layer * capacity_ * (key_dim_ + value_dim_);
  }

  HostBuffer storage_;
  std::unique_ptr<ExternalStorage> external_;
  int64_t n_layers_ = 0;
  int64_t key_dim_ = 0;
  int64_t value_dim_ = 0;
  int64_t capacity_ = 0;
  int64_t n_past_ = 0;
};

}  // namespace dancemoe
