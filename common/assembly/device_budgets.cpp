#include "common/assembly/device_budgets.h"

#include "common/base/byte_size.h"

namespace dancemoe {
namespace {

uint64_t share(uint64_t total, uint64_t part, uint64_t whole) {
  if (whole == 0) return 0;
  return static_cast<uint64_t>(static_cast<long double>(total) * part / whole);
}

std::string dense_breakdown(const BudgetRequest& r) {
  return "dense part " + format_bytes(r.dense_bytes) + ", KV cache " +
         format_bytes(r.kv_cache_bytes) + ", workspace " + format_bytes(r.workspace_bytes);
}

}  // namespace

Result<std::vector<uint64_t>> plan_expert_budgets(const BudgetRequest& request) {
  const size_t n = request.devices.size();
  if (n == 0) return invalid_argument("no device to plan expert memory for");
  const uint64_t beside_dense =
      request.dense_bytes + request.kv_cache_bytes + request.workspace_bytes;
  std::vector<uint64_t> room(n, 0);

  // GPUs: their own memory.
  for (size_t g = 0; g < n; ++g) {
    const DeviceCapacity& d = request.devices[g];
    if (d.kind != backend::DeviceKind::kCuda) continue;
    uint64_t taken = 0;
    if (static_cast<int>(g) == request.dense_device) {
      taken = beside_dense;
      if (taken > d.available_bytes) {
        return resource_exhausted(d.name + ": the dense part does not fit: it needs " +
                                  format_bytes(taken) + " (" + dense_breakdown(request) +
                                  ") and the device has " + format_bytes(d.available_bytes) +
                                  " free");
      }
    }
    room[g] = d.available_bytes - taken;
  }

  // CPU devices: the host's memory, shared.
  uint64_t host_available = 0;
  for (const DeviceCapacity& d : request.devices) {
    if (d.kind == backend::DeviceKind::kCpu) host_available += d.available_bytes;
  }
  uint64_t host_taken = request.host_reserved_bytes;
  if (request.dense_device < 0) host_taken += beside_dense;
  bool any_cpu = false;
  for (const DeviceCapacity& d : request.devices) any_cpu |= d.kind == backend::DeviceKind::kCpu;
  if (any_cpu && host_taken > host_available) {
    return resource_exhausted(
        "host memory: the process needs " + format_bytes(host_taken) + " beside the experts (" +
        (request.dense_device < 0 ? dense_breakdown(request) + ", " : std::string()) +
        "other reservations " + format_bytes(request.host_reserved_bytes) + ") and " +
        format_bytes(host_available) + " is available");
  }
  for (size_t g = 0; g < n; ++g) {
    const DeviceCapacity& d = request.devices[g];
    if (d.kind != backend::DeviceKind::kCpu) continue;
    room[g] = d.available_bytes - share(host_taken, d.available_bytes, host_available);
  }

  // Budgets: explicit per device, then the node's total over the rest, then room.
  std::vector<uint64_t> budgets(n, 0);
  uint64_t rest_room = 0;
  uint64_t explicit_total = 0;
  for (size_t g = 0; g < n; ++g) {
    const DeviceCapacity& d = request.devices[g];
    if (!d.requested_bytes) {
      rest_room += room[g];
      continue;
    }
    if (*d.requested_bytes > room[g]) {
      return resource_exhausted(d.name + ": --device-memory asks for " +
                                format_bytes(*d.requested_bytes) + " of expert memory, but " +
                                format_bytes(room[g]) +
                                " is free there after the rest of the model (" +
                                format_bytes(d.available_bytes) + " free in all)");
    }
    budgets[g] = *d.requested_bytes;
    explicit_total += *d.requested_bytes;
  }
  for (size_t g = 0; g < n; ++g) {
    if (request.devices[g].requested_bytes) continue;
    if (!request.node_expert_bytes) {
      budgets[g] = room[g];
      continue;
    }
    const uint64_t node_rest = *request.node_expert_bytes > explicit_total
                                   ? *request.node_expert_bytes - explicit_total
                                   : 0;
    if (node_rest > rest_room) {
      return resource_exhausted(
          "--expert-memory asks for " + format_bytes(*request.node_expert_bytes) +
          " of expert memory, but the devices have " + format_bytes(rest_room + explicit_total) +
          " free after the rest of the model");
    }
    budgets[g] = share(node_rest, room[g], rest_room);
  }
  return budgets;
}

}  // namespace dancemoe
