// KvCache: the keys and values of one sequence, per layer, in f32:
//   k, v: [n_layers][capacity, kv_dim]
// A CPU cache's memory comes from an anonymous mapping, so only the positions
// actually used become resident. A backend that computes elsewhere (a GPU)
// makes caches whose storage lives there: external_storage() is then its
// handle and keys()/values() are null. Make caches with
// Transformer::new_cache, which asks the model's backend. Owned by one
// sequence; not thread-safe.
#pragma once

#include <cstdint>
#include <memory>

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

  static Result<KvCache> create(int64_t n_layers, int64_t kv_dim, int64_t capacity);
  static KvCache external(int64_t n_layers, int64_t kv_dim, int64_t capacity,
                          std::unique_ptr<ExternalStorage> storage);

  int64_t capacity() const { return capacity_; }
  int64_t kv_dim() const { return kv_dim_; }
  // Positions already filled (the next token goes at n_past()).
  int64_t n_past() const { return n_past_; }
  void set_n_past(int64_t n) { n_past_ = n; }
  void clear() { n_past_ = 0; }

  float* keys(int64_t layer) { return external_ ? nullptr : base(layer, 0); }
  float* values(int64_t layer) { return external_ ? nullptr : base(layer, 1); }
  ExternalStorage* external_storage() const { return external_.get(); }

 private:
  float* base(int64_t layer, int kind) {
    return static_cast<float*>(storage_.data()) + ((layer * 2 + kind) * capacity_ * kv_dim_);
  }

  HostBuffer storage_;
  std::unique_ptr<ExternalStorage> external_;
  int64_t n_layers_ = 0;
  int64_t kv_dim_ = 0;
  int64_t capacity_ = 0;
  int64_t n_past_ = 0;
};

}  // namespace dancemoe
