// Input validation and memory accounting shared by every policy.
//
// Memory is counted as DESIGN.md §5 and issue 3 decide: a device holds whole
// experts only, so with equal expert sizes a device has
// floor(expert_budget_bytes / expert_bytes) slots and a node's capacity is the
// sum over its devices. With unequal sizes (layers whose experts differ in
// size) capacity is counted in bytes and packing onto devices may fragment;
// see packing.h.
//
// Pure functions over values; safe to call from any thread.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/base/status.h"
#include "scheduler/placement/types.h"

namespace dancemoe::placement {

struct Capacity {
  // True when all experts have the same size: memory is counted in slots.
  bool slot_based = false;
  uint64_t slot_bytes = 0;  // the common expert size when slot_based
  // Whole-expert slots per device, [node][device] (slot_based only).
  std::vector<std::vector<int64_t>> device_slots;
  // Slots per node: the sum over its devices, capped at n_experts_total since
  // a node never holds an expert twice (slot_based only).
  std::vector<int64_t> node_slots;
  // Bytes a node can spend on experts: node_slots * slot_bytes when
  // slot_based, else the sum of its devices' budgets.
  std::vector<uint64_t> node_bytes;
};

Capacity compute_capacity(const Cluster& cluster, const ModelShape& model);

// Checks shapes, ranges and feasibility. Errors name the field and value at
// fault: invalid_argument for malformed input (mismatched shapes, negative or
// non-finite counts, a device without load bandwidth), resource_exhausted when
// memory is short (a node that can hold no expert at all, or a cluster that
// cannot hold every expert once; the message says how many bytes are missing).
// A present `current` placement must match the cluster's shape and name valid
// experts; it need not cover every expert (a node may have died).
Status validate_problem(const Problem& problem);

// Best-fit decreasing packing of one copy of every expert over all devices
// (largest experts first, each to the device with the least room that fits,
// devices in node-major order, ties to the first). Returns, per expert, its
// (node, device); resource_exhausted naming the expert that found no room.
// validate_problem uses it as the feasibility check for unequal sizes, and
// the policies' fragmentation fallback starts from it, so a validated
// problem always has this packing.
Result<std::vector<std::pair<int32_t, int32_t>>> one_copy_packing(const Problem& problem);

struct PlacementCheck {
  bool require_coverage = true;  // every expert on at least one device
  bool check_memory = true;      // no device over its expert budget
};

// Checks a placement against the problem: shape, ids in range, sorted device
// lists, no expert twice on one node, and (as asked) coverage and memory.
Status check_placement(const Problem& problem, const Placement& placement,
                       PlacementCheck check = {});

}  // namespace dancemoe::placement
