// KvCache: the keys and values of one sequence, per layer, in f32:
//   k, v: [n_layers][capacity, kv_dim]
// Memory comes from an anonymous mapping, so only the positions actually
// used become resident. Owned by one sequence; not thread-safe.
#pragma once

#include <cstdint>

#include "common/base/status.h"
#include "common/tensor/host_buffer.h"

namespace dancemoe {

class KvCache {
 public:
  static Result<KvCache> create(int64_t n_layers, int64_t kv_dim, int64_t capacity);

  int64_t capacity() const { return capacity_; }
  int64_t kv_dim() const { return kv_dim_; }
  // Positions already filled (the next token goes at n_past()).
  int64_t n_past() const { return n_past_; }
  void set_n_past(int64_t n) { n_past_ = n; }
  void clear() { n_past_ = 0; }

  float* keys(int64_t layer) { return base(layer, 0); }
  float* values(int64_t layer) { return base(layer, 1); }

 private:
  float* base(int64_t layer, int kind) {
    return static_cast<float*>(storage_.data()) + ((layer * 2 + kind) * capacity_ * kv_dim_);
  }

  HostBuffer storage_;
  int64_t n_layers_ = 0;
  int64_t kv_dim_ = 0;
  int64_t capacity_ = 0;
  int64_t n_past_ = 0;
};

}  // namespace dancemoe
