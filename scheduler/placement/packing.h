// Packing a node-level choice of experts onto the node's devices.
//
// Every policy first decides which experts each *node* holds (NodeSets), then
// calls pack_onto_devices, which decides the device. Two goals, in order:
//   1. Stay put: when the problem has a current placement, an expert that the
//      node keeps stays on its current device (a move between devices costs a
//      reload, see costs.h), as long as that device has room.
//   2. Balance: the other experts are taken heaviest first (by the node's own
//      activation counts, ties by lower id) and each goes to the device with
//      the least activation load that still has room (ties: more free room,
//      then lower device index) — longest-processing-time-first, which keeps
//      the node's busiest device close to the mean.
//
// With equal expert sizes this always succeeds when each node set fits the
// node's slots (validate.h). With unequal sizes, experts are packed largest
// first (bytes, then load) for fit, and fragmentation can leave an expert
// without a device; then a node with device hints uses them instead (they
// are known to fit), and otherwise the documented repair runs: a replica (held by
// another node too) is dropped; a sole copy goes to the device anywhere in the
// cluster with room whose node uses it most, else room is made there by
// evicting the least-used replicas of that device. If no repair exists the
// result is resource_exhausted naming the expert and the missing bytes.
//
// Pure function of its inputs; safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "common/base/status.h"
#include "scheduler/placement/types.h"
#include "scheduler/placement/validate.h"

namespace dancemoe::placement {

// [node] -> the flat ids of the experts the node holds, in any order, no repeats.
using NodeSets = std::vector<std::vector<ExpertIndex>>;
// [node][expert] -> a device index known to fit the node's whole set, -1 when
// not held (see NodeRoom): the fallback when balanced packing fragments.
using DeviceHints = std::vector<std::vector<int32_t>>;

// A node-level choice with the device assignment that proves it fits.
struct NodeChoice {
  NodeSets sets;
  DeviceHints hints;
};

Result<Placement> pack_onto_devices(const Problem& problem, const Capacity& capacity,
                                    const NodeSets& sets, std::string method,
                                    const DeviceHints* hints = nullptr);

// Per node: bytes of its set; and a check that each set fits its node.
uint64_t set_bytes(const ModelShape& model, const std::vector<ExpertIndex>& set);

}  // namespace dancemoe::placement
