// Building blocks shared by the policies: per-node room accounting while a
// node-level choice (NodeSets) is built, global activation totals, and the
// even one-copy spread used by `uniform` and `redundance`.
//
// NodeRoom is a mutable working value owned by one policy call; not shared.
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/status.h"
#include "scheduler/placement/packing.h"
#include "scheduler/placement/types.h"
#include "scheduler/placement/validate.h"

namespace dancemoe::placement {

// Remaining memory per node, counted in bytes (with equal expert sizes the
// node's bytes are its whole slots times the expert size, so byte accounting
// is slot accounting).
class NodeRoom {
 public:
  NodeRoom(const Problem& problem, const Capacity& capacity);

  const ModelShape& model() const { return *model_; }
  size_t n_nodes() const { return sets_.size(); }
  int32_t n_experts_total() const { return static_cast<int32_t>(copies_.size()); }
  bool holds(size_t n, ExpertId x) const { return holds_[n][x] != 0; }
  // Room for x on n and n does not hold it yet.
  bool fits(size_t n, ExpertId x) const;
  uint64_t free_bytes(size_t n) const { return free_bytes_[n]; }
  uint64_t capacity_bytes(size_t n) const { return capacity_bytes_[n]; }
  int32_t copies(ExpertId x) const { return copies_[x]; }

  void take(size_t n, ExpertId x);
  void drop(size_t n, ExpertId x);

  const NodeSets& sets() const { return sets_; }
  NodeSets release() { return std::move(sets_); }

 private:
  const ModelShape* model_;
  std::vector<uint64_t> capacity_bytes_;
  std::vector<uint64_t> free_bytes_;
  std::vector<std::vector<uint8_t>> holds_;
  std::vector<int32_t> copies_;
  NodeSets sets_;
};

// sum_n f[n][x] for every expert.
std::vector<double> global_counts(const Problem& problem);

// Experts ordered by global count descending, ties by lower id.
std::vector<ExpertId> experts_by_global_count(const Problem& problem);

// Gives every expert one copy, in flat-id order, to the nodes in a smooth
// weighted round-robin with weights proportional to node memory: consecutive
// experts of a layer land on different nodes and each node's share of the
// experts matches its share of the memory. Statistics are not used.
Status spread_once(NodeRoom& room);

}  // namespace dancemoe::placement
