#include "common/backend/memory_plan.h"

#include <cstdio>
#include <limits>

namespace dancemoe::backend {

std::string DevicePlan::describe() const {
  return "dense weights " + format_bytes(dense_bytes) + ", " + std::to_string(n_experts) +
         " experts" + (n_slots > n_experts ? " in " + std::to_string(n_slots) + " slots " : " ") +
         format_bytes(expert_bytes) + ", KV cache " + format_bytes(kv_cache_bytes) +
         ", workspace " + format_bytes(workspace_bytes);
}

Result<MemoryPlan> plan_memory(const PlanRequest& request) {
  const size_t n_devices = request.devices.size();
  if (n_devices == 0) return invalid_argument("--devices " + request.device_text + ": no device");
  if (request.dense_index < 0 || static_cast<size_t>(request.dense_index) >= n_devices) {
    return invalid_argument("dense device index " + std::to_string(request.dense_index) +
                            " is not among the " + std::to_string(n_devices) +
                            " devices of --devices " + request.device_text);
  }
  const PlanSizes& sizes = request.sizes;
  MemoryPlan plan;
  plan.devices.resize(n_devices);
  DevicePlan& dense = plan.devices[static_cast<size_t>(request.dense_index)];
  dense.dense_bytes = sizes.dense_bytes;
  dense.kv_cache_bytes = sizes.kv_cache_bytes;
  dense.workspace_bytes = sizes.forward_workspace_bytes;

  plan.expert_index.assign(request.resident.size(), 0);
  auto place = [&](size_t i, size_t d) {
    plan.expert_index[i] = static_cast<int>(d);
    plan.devices[d].expert_bytes += sizes.expert_bytes;
    plan.devices[d].n_experts += 1;
  };
  if (!request.expert_ordinals.empty()) {
    if (request.expert_ordinals.size() != request.resident.size()) {
      return invalid_argument("the expert placement names " +
                              std::to_string(request.expert_ordinals.size()) + " devices for " +
                              std::to_string(request.resident.size()) + " experts");
    }
    for (size_t i = 0; i < request.resident.size(); ++i) {
      size_t d = 0;
      while (d < n_devices && request.devices[d].ordinal != request.expert_ordinals[i]) ++d;
      if (d == n_devices) {
        return invalid_argument("the placement puts expert " +
                                std::to_string(request.resident[i].expert) + " of layer " +
                                std::to_string(request.resident[i].layer) + " on device " +
                                std::to_string(request.expert_ordinals[i]) +
                                ", which is not among --devices " + request.device_text);
      }
      place(i, d);
    }
  } else {
    // Each expert to the device with the most room left once it is there
    // (ties to the first listed), so the devices fill in proportion to their
    // room; the dense device's parts are already counted.
    for (size_t i = 0; i < request.resident.size(); ++i) {
      size_t best = 0;
      int64_t best_left = std::numeric_limits<int64_t>::min();
      for (size_t d = 0; d < n_devices; ++d) {
        const int64_t left =
            static_cast<int64_t>(request.devices[d].limit_bytes()) -
            static_cast<int64_t>(plan.devices[d].total_bytes() + sizes.expert_bytes);
        if (left > best_left) {
          best_left = left;
          best = d;
        }
      }
      place(i, best);
    }
  }
  for (size_t d = 0; d < n_devices; ++d) {
    DevicePlan& p = plan.devices[d];
    p.n_slots = p.n_experts;
    if (d < request.expert_slots.size() && request.expert_slots[d] > p.n_slots) {
      p.n_slots = request.expert_slots[d];
      p.expert_bytes = static_cast<uint64_t>(p.n_slots) * sizes.expert_bytes;
    }
    if (p.n_slots > 0) p.workspace_bytes += sizes.expert_workspace_bytes;
    p.expert_bytes += sizes.expert_table_bytes;
    const PlanDevice& device = request.devices[d];
    if (p.total_bytes() > device.limit_bytes()) {
      return resource_exhausted(device.label + ": not enough memory for the model: wanted " +
                                format_bytes(p.total_bytes()) + " (" + p.describe() + "), " +
                                format_bytes(device.free_bytes) + " free on the device, budget " +
                                format_bytes(device.budget_bytes));
    }
  }
  return plan;
}

}  // namespace dancemoe::backend
