// How much memory each device of a process may give to experts (DESIGN.md
// §5.1: mem[n][g] = device budget - dense weights - KV cache - workspace),
// decided before a single weight is read, so a device that is absent, too
// small or over-asked is refused at once with the device named.
//
//   room(g)   what device g can hold beside everything else it holds:
//             a GPU: free memory - (dense part + KV cache + workspace, on the
//                    GPU that holds the dense part);
//             CPU devices share the host: MemAvailable - host reservations
//                    (the dense part and KV cache when no GPU holds them, the
//                    workspace, the caller's reserved bytes), split over the
//                    CPU devices in proportion to what each has available.
//   budget(g) --device-memory for g when given (refused above room(g));
//             else a share of --expert-memory (the node's total, split over
//             the devices without --device-memory in proportion to their
//             room; refused above their total room);
//             else room(g).
//
// Pure arithmetic (tests give it any machine); thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/backend/device_options.h"
#include "common/base/status.h"

namespace dancemoe {

struct DeviceCapacity {
  std::string name;  // "cpu:1", "cuda:0"
  backend::DeviceKind kind = backend::DeviceKind::kCpu;
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
  std::optional<uint64_t> requested_bytes;  // --device-memory
};

struct BudgetRequest {
  std::vector<DeviceCapacity> devices;
  int dense_device = -1;         // index of the GPU that holds the dense part; -1: the host
  uint64_t dense_bytes = 0;      // the dense part as that device holds it
  uint64_t kv_cache_bytes = 0;   // KV cache reserved beside it
  uint64_t workspace_bytes = 0;  // forward scratch beside it
  // Host bytes taken by other things (an offload cache; the host copy of a
  // dense part that a GPU holds).
  uint64_t host_reserved_bytes = 0;
  std::optional<uint64_t> node_expert_bytes;  // --expert-memory
};

// One budget per device, in order. resource_exhausted naming the device
// (or "host memory"), the bytes wanted with their breakdown and the bytes
// free when the dense part does not fit or a requested budget exceeds the
// room.
Result<std::vector<uint64_t>> plan_expert_budgets(const BudgetRequest& request);

}  // namespace dancemoe
