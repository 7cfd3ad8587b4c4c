// Where a model runs: the devices of one process (--devices) with their
// expert memory (--device-memory), and the batch and KV sizes a GPU forward
// is planned for. Read by the runtime assembly (common/assembly/
// model_runtime.h); the node and the CLI fill it from the same flags.
//
// A device is "cpu" (every core this process may run on), "cpu:N" (NUMA
// node N, or -- on a machine with one NUMA node -- the N-th of the equal
// slices the listed cpu:N devices cut the cores into, each with its own
// threads) or "cuda:N" (GPU ordinal N). Each device is a placement target
// with its own expert budget (DESIGN.md §2, z[n][g]). Values only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace dancemoe::backend {

enum class DeviceKind { kCpu, kCuda };

// "cpu" or "cuda".
std::string_view device_kind_name(DeviceKind kind);

// One entry of --devices.
struct DeviceName {
  DeviceKind kind = DeviceKind::kCpu;
  int index = -1;  // -1 only for "cpu" (every core); N for cpu:N and cuda:N

  std::string text() const;  // "cpu", "cpu:1", "cuda:0"
  bool is_cpu() const { return kind == DeviceKind::kCpu; }
  bool is_cuda() const { return kind == DeviceKind::kCuda; }
  friend bool operator==(const DeviceName&, const DeviceName&) = default;
};

struct DeviceOptions {
  // --devices, in order; the dense part lives on the first cuda:N if any.
  std::vector<DeviceName> devices{DeviceName{}};
  // --device-memory DEV=BYTES: the expert budget of a device, by its text;
  // a device without an entry gets what is free on it after the dense part,
  // KV cache and workspace (see common/assembly/device_budgets.h).
  std::map<std::string, uint64_t> expert_memory;
  // Threads of the "cpu" device; 0: one per core this process may use.
  // A cpu:N device has one thread per core of its slice.
  int n_threads = 0;
  // Longest batch one GPU forward takes (longer prompts are split); the
  // workspace is sized for it once, at load.
  int64_t max_batch_tokens = 512;
  // KV-cache positions reserved on the GPU at load (one sequence); 0:
  // min(max_position_embeddings, 4096).
  int64_t kv_cache_tokens = 0;
  // Run MoE layers through the MoeExecutor even when the GPU that runs the
  // forward holds every expert: what a node with remote experts does; tests
  // use it to check that path.
  bool experts_via_executor = false;
  // GPU decode steps replay a captured CUDA graph (see cuda_forward.h).
  bool cuda_graphs = true;

  // Index of the first cuda:N device, or -1.
  int first_cuda() const;
  // Index of the device with this text ("cpu:1"), or -1.
  int find(std::string_view text) const;
  // "cpu:0,cpu:1": the --devices text.
  std::string text() const;
};

// Parses --devices: a comma-separated list of cpu, cpu:N and cuda:N without
// repeats, where cpu and cpu:N do not mix. invalid_argument naming the text
// and the forms expected.
Result<std::vector<DeviceName>> parse_device_list(std::string_view text);

// Parses one --device-memory DEV=BYTES (BYTES as common/base/byte_size.h
// reads it) into options->expert_memory. invalid_argument naming the flag's
// text for a malformed value, a device not in options->devices, or a device
// given twice.
Status parse_device_memory(std::string_view text, DeviceOptions* options);

}  // namespace dancemoe::backend
