// ExpertStore: the resident set of a node's experts. The expert -- the
// weights of one (layer, expert) pair: gate, up and down projections -- is
// the unit of storage, placement and migration. Each resident expert owns
// one aligned HostBuffer holding its three matrices in their on-disk dtype.
//
// Thread-safety: all methods may be called concurrently. get() hands out a
// shared_ptr, so an expert evicted while a forward pass still uses it stays
// alive until that pass drops it (migration evicts under live traffic).
// Loading reads from the checkpoint outside the lock, so serving is not
// blocked by a load.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/base/status.h"
#include "common/model/checkpoint.h"
#include "common/model/dense_weights.h"
#include "common/model/expert_arena.h"
#include "common/model/expert_ref.h"
#include "kernels/kernels.h"

namespace dancemoe {

struct ExpertWeights {
  ExpertRef key;
  ExpertArena::Slot storage;
  kernels::WeightView gate;  // [moe_intermediate, hidden]
  kernels::WeightView up;    // [moe_intermediate, hidden]
  kernels::WeightView down;  // [hidden, moe_intermediate]
  uint64_t n_bytes = 0;      // exact weight bytes (sum of the three tensors)
};

class ExpertStore {
 public:
  // The checkpoint must outlive the store.
  explicit ExpertStore(const Checkpoint& checkpoint);

  // Reads the expert from the checkpoint unless it is already resident.
  // invalid_argument for a layer without experts or an index out of range.
  Status load(ExpertRef key);
  // Installs an expert from its weight bytes in the checkpoint's layout --
  // gate, up and down back to back, each in its on-disk dtype -- e.g. weights
  // fetched from a peer during a migration. invalid_argument when the byte
  // count is not the expert's size; a no-op when it is already resident.
  Status install(ExpertRef key, std::span<const uint8_t> bytes);
  // Loads a list of experts, reporting progress in bytes.
  Status load_many(const std::vector<ExpertRef>& keys, const LoadProgress& progress = {});
  // Loads every expert of every MoE layer.
  Status load_all(const LoadProgress& progress = {});
  // Drops the store's reference; returns false when it was not resident.
  bool evict(ExpertRef key);

  // nullptr when not resident (or out of range).
  std::shared_ptr<const ExpertWeights> get(ExpertRef key) const;
  bool is_resident(ExpertRef key) const { return get(key) != nullptr; }

  // Exact bytes of an expert's weights, resident or not (from the tensor index).
  uint64_t expert_bytes(ExpertRef key) const;
  uint64_t resident_bytes() const;
  int64_t n_resident() const;
  std::vector<ExpertRef> resident_keys() const;

  Status check_key(ExpertRef key) const;

 private:
  size_t slot(ExpertRef key) const;
  // Allocates the expert's storage, lets `fill` write the three tensors at
  // their offsets, and makes it resident.
  template <typename Fill>
  Status make_resident(ExpertRef key, Fill&& fill);

  const Checkpoint& checkpoint_;
  ExpertArena arena_;
  int64_t n_layers_;
  int64_t n_experts_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const ExpertWeights>> slots_;  // [layer * n_experts + expert]
  uint64_t resident_bytes_ = 0;
};

}  // namespace dancemoe
