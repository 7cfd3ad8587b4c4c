// The load-time memory plan of a GPU backend: what each device will hold
// (dense weights, experts, KV cache, workspace), which device each resident
// expert goes to, and the check of every device's total against its budget
// and free memory -- all before a single byte is allocated.
//
// Pure arithmetic over a description of the devices (label, budget, free
// bytes) and the byte sizes of the model's parts, so it is the same code on
// any backend and is tested without a GPU (tests/common/backend/
// memory_plan_test.cpp). The CUDA backend (cuda/cuda_backend.cpp) fills the
// description from the driver and the sizes from its weight layout.
//
// Values only; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/byte_size.h"
#include "common/base/status.h"
#include "common/inference/expert_store.h"

namespace dancemoe::backend {

// One device as the planner sees it.
struct PlanDevice {
  int ordinal = 0;
  std::string label;          // "cuda:0 (NVIDIA RTX 4090)": names the device in errors
  uint64_t budget_bytes = 0;  // what this process may use (--device-budget)
  uint64_t free_bytes = 0;    // what the driver reports free now
  uint64_t limit_bytes() const { return budget_bytes < free_bytes ? budget_bytes : free_bytes; }
};

// Byte sizes of the parts, as the backend lays them out.
struct PlanSizes {
  uint64_t dense_bytes = 0;              // embeddings, attention, norms, routers, LM head
  uint64_t expert_bytes = 0;             // one expert (gate + up + down)
  uint64_t kv_cache_bytes = 0;           // the KV cache reserved at load
  uint64_t forward_workspace_bytes = 0;  // the forward's activations (dense device)
  uint64_t expert_workspace_bytes = 0;   // per device that holds experts
  uint64_t expert_table_bytes = 0;       // every device: its expert pointer tables
};

struct PlanRequest {
  std::vector<PlanDevice> devices;  // in --device order, at least one
  int dense_index = 0;              // index into devices: dense part, KV cache, workspace
  PlanSizes sizes;
  std::vector<ExpertRef> resident;  // the experts to place
  // Device ordinal of each resident expert (the placement's (node, device));
  // empty: spread over the devices, each to the one with the most room left.
  std::vector<int> expert_ordinals;
  // Expert slots to reserve per device (parallel to devices; empty: none
  // beyond the resident experts): room for experts that arrive later.
  std::vector<int64_t> expert_slots;
  std::string device_text;  // the --devices text, for errors
};

// What one device holds.
struct DevicePlan {
  uint64_t dense_bytes = 0;
  uint64_t expert_bytes = 0;  // every slot, filled or not
  int64_t n_experts = 0;      // filled at load
  int64_t n_slots = 0;        // >= n_experts
  uint64_t kv_cache_bytes = 0;
  uint64_t workspace_bytes = 0;
  uint64_t total_bytes() const {
    return dense_bytes + expert_bytes + kv_cache_bytes + workspace_bytes;
  }
  // "dense weights N bytes (..), 12 experts .., KV cache .., workspace .."
  std::string describe() const;
};

struct MemoryPlan {
  std::vector<DevicePlan> devices;  // parallel to PlanRequest::devices
  std::vector<int> expert_index;    // per resident expert: index into devices
};

// invalid_argument when the request is malformed (no device, a dense index
// or an expert ordinal that is not among the devices, a placement of the
// wrong length); resource_exhausted naming the device, the bytes wanted
// (with the breakdown), the bytes free and the budget when a device's part
// does not fit.
Result<MemoryPlan> plan_memory(const PlanRequest& request);

}  // namespace dancemoe::backend
