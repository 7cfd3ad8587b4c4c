// The devices of a runtime, resolved before anything is loaded: every entry
// of --devices checked to exist (CPU devices mapped to their cores and
// memory, common/backend/cpu/cpu_topology.h; GPUs probed), and each given
// its expert budget (device_budgets.h) from the checkpoint's sizes. The
// first two steps of ModelRuntime::open, and what `dancemoe doctor` checks
// a node's flags with. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/backend/device_options.h"
#include "common/base/status.h"
#include "common/inference/compute_precision.h"
#include "common/inference/kv_cache.h"
#include "common/model/checkpoint.h"

namespace dancemoe {

// One device as the runtime holds it.
struct RuntimeDevice {
  std::string name;  // "cpu", "cpu:1", "cuda:0"
  backend::DeviceKind kind = backend::DeviceKind::kCpu;
  std::string label;  // for logs: "cpu:1 (cores 1)", "cuda:0 (NVIDIA H100 ...)"
  uint64_t expert_budget_bytes = 0;
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;  // at open, before loading
  std::vector<int> cpus;         // CPU device: the cores its threads run on (empty: any)
  int n_threads = 0;             // CPU device
  int numa_node = -1;            // CPU device bound to a NUMA node
  int gpu_index = -1;            // GPU: index among the GPUs of the list
};

struct DeviceRequest {
  backend::DeviceOptions devices;
  ComputePrecision precision = ComputePrecision::kBF16;
  // --expert-memory: the node's expert budget over its devices (see
  // device_budgets.h); nullopt: what is free.
  std::optional<uint64_t> expert_memory_bytes;
  // Host memory to leave for other things when sizing budgets (a node's
  // offload cache) and KV-cache positions to plan for (one sequence).
  uint64_t host_reserved_bytes = 0;
  int64_t kv_cache_tokens = 4096;
  // --kv-type: what CPU KV caches store (kv_cache.h); a GPU's are f32.
  KvElement kv_element = KvElement::kF32;
};

// The devices in --devices order, each with its budget; errors name the
// device and the bytes wanted and free (see device_budgets.h).
Result<std::vector<RuntimeDevice>> resolve_runtime_devices(const Checkpoint& checkpoint,
                                                           const DeviceRequest& request);

}  // namespace dancemoe
