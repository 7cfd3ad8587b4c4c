// Building blocks shared by the policies: per-node room accounting while a
// node-level choice (NodeSets) is built, global activation totals, and the
// even one-copy spread used by `uniform` and `redundance`.
//
// NodeRoom is a mutable working value owned by one policy call; not shared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "scheduler/placement/packing.h"
#include "scheduler/placement/types.h"
#include "scheduler/placement/validate.h"

namespace dancemoe::placement {

// Remaining memory per node and device, counted in bytes (with equal expert
// sizes a device's bytes are its whole slots times the expert size, so byte
// accounting is slot accounting). Every expert taken is also assigned a
// device (best fit: the device with the least room that still fits it), so
// a node's set is always packable; packing may rearrange it for balance and
// falls back to this assignment (hints()) when fragmentation defeats it.
class NodeRoom {
 public:
  NodeRoom(const Problem& problem, const Capacity& capacity);

  const ModelShape& model() const { return *model_; }
  size_t n_nodes() const { return sets_.size(); }
  int32_t n_experts_total() const { return static_cast<int32_t>(copies_.size()); }
  bool holds(size_t n, ExpertIndex x) const { return device_of_[n][x] >= 0; }
  // n does not hold x yet and one of its devices has room for it.
  bool fits(size_t n, ExpertIndex x) const;
  uint64_t free_bytes(size_t n) const { return free_bytes_[n]; }
  size_t n_devices(size_t n) const { return device_free_[n].size(); }
  uint64_t device_free(size_t n, size_t g) const { return device_free_[n][g]; }
  // Device of n holding x, -1 if none.
  int32_t device_of(size_t n, ExpertIndex x) const { return device_of_[n][x]; }
  uint64_t capacity_bytes(size_t n) const { return capacity_bytes_[n]; }
  int32_t copies(ExpertIndex x) const { return copies_[x]; }

  void take(size_t n, ExpertIndex x);               // on the best-fitting device
  void take_on(size_t n, size_t g, ExpertIndex x);  // on device g (caller checked room)
  void drop(size_t n, ExpertIndex x);

  const NodeSets& sets() const { return sets_; }
  NodeSets release() { return std::move(sets_); }
  // The device assignment made so far, for pack_onto_devices.
  const DeviceHints& hints() const { return device_of_; }

 private:
  const ModelShape* model_;
  std::vector<uint64_t> capacity_bytes_;
  std::vector<uint64_t> free_bytes_;
  std::vector<std::vector<uint64_t>> device_free_;  // [node][device]
  DeviceHints device_of_;                           // [node][expert], -1 = not held
  std::vector<int32_t> copies_;
  NodeSets sets_;
};

// The speed at which node n loads an expert, for the migration-aware
// policies, which choose per node before packing picks the device: the mean
// of its devices' load speeds weighted by their room (slots, or bytes with
// unequal sizes), the plain mean when the node has no room. T_mig itself
// (costs.h) is computed per device.
double node_load_bytes_per_s(const Problem& problem, const Capacity& capacity, size_t n);

// sum_n f[n][x] for every expert.
std::vector<double> global_counts(const Problem& problem);

// Experts ordered by global count descending, ties by lower id.
std::vector<ExpertIndex> experts_by_global_count(const Problem& problem);

// Fallback for a first copy of x that no node has room for (fragmentation
// with unequal expert sizes): takes the tightest device anywhere that fits;
// else drops replicas (experts held elsewhere too) from the one device where
// the fewest must go; else moves one expert from some device to another
// device that has room (on any node that lacks it) so that x fits there.
// resource_exhausted if none works.
Status take_somewhere(NodeRoom& room, ExpertIndex x);

// Last resort when fragmentation (unequal sizes) defeats a policy: one copy
// of every expert where one_copy_packing (validate.h) puts it, which always
// fits a validated problem, then each node takes the experts of wanted[n],
// in that order, where they fit. The method says the fallback was used.
Result<Placement> fragmentation_fallback(const Problem& problem, const Capacity& capacity,
                                         const NodeSets& wanted, const std::string& label);

// Experts in flat-id order, or by descending size (ties: id) when sizes differ,
// the order that packs best.
std::vector<ExpertIndex> experts_for_packing(const ModelShape& model);

// Gives every expert one copy, in flat-id order (largest first when sizes
// differ), to the nodes in a smooth weighted round-robin with weights
// proportional to node memory: consecutive experts of a layer land on
// different nodes and each node's share of the experts matches its share of
// the memory. Statistics are not used. Falls back to take_somewhere.
Status spread_once(NodeRoom& room);

}  // namespace dancemoe::placement
