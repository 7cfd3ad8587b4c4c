#include "common/assembly/runtime_devices.h"

#include <algorithm>

#include "common/assembly/device_budgets.h"
#include "common/backend/backend_registry.h"
#include "common/backend/cpu/cpu_topology.h"

namespace dancemoe {

namespace {

// Scratch the CPU forward needs beside weights and KV cache.
constexpr uint64_t kCpuWorkspaceBytes = 256ull << 20;

std::string cpu_label(const backend::CpuSlice& slice) {
  if (slice.cpus.empty()) return slice.name + " (" + std::to_string(slice.n_threads) + " threads)";
  std::string cores;
  for (int c : slice.cpus) cores += (cores.empty() ? "" : ",") + std::to_string(c);
  std::string label = slice.name + " (cores " + cores;
  if (slice.numa_node >= 0) label += ", NUMA node " + std::to_string(slice.numa_node);
  return label + ")";
}

// Every device of the list exists; CPU devices get their cores.
Result<std::vector<RuntimeDevice>> resolve(const DeviceRequest& options) {
  std::vector<RuntimeDevice> devices;
  const backend::DeviceOptions& list = options.devices;
  if (list.devices.empty()) return invalid_argument("--devices lists no device");
  if (list.first_cuda() >= 0 && options.precision != ComputePrecision::kBF16) {
    return invalid_argument("--devices " + list.text() +
                            ": GPUs compute with bf16 activations; use --precision bf16 (f32 is "
                            "the CPU reference mode)");
  }
  if (list.first_cuda() >= 0 && options.kv_element != KvElement::kF32) {
    return invalid_argument("--kv-type " + std::string(kv_element_name(options.kv_element)) +
                            ": the CUDA engine keeps its KV cache in f32 on the device; use "
                            "--kv-type f32 with --devices " +
                            list.text());
  }
  const backend::CpuTopology topology = backend::CpuTopology::read();
  DMOE_ASSIGN_OR_RETURN(std::vector<backend::CpuSlice> slices,
                        backend::resolve_cpu_devices(list.devices, topology, list.n_threads));
  size_t next_slice = 0;
  int next_gpu = 0;
  for (const backend::DeviceName& name : list.devices) {
    RuntimeDevice d;
    d.name = name.text();
    d.kind = name.kind;
    if (name.is_cpu()) {
      const backend::CpuSlice& slice = slices[next_slice++];
      d.cpus = slice.cpus;
      d.n_threads = slice.n_threads;
      d.numa_node = slice.numa_node;
      d.total_bytes = slice.total_bytes;
      d.available_bytes = slice.available_bytes;
      d.label = cpu_label(slice);
    } else {
      Result<backend::GpuMemory> gpu = backend::probe_gpu(name.index);
      if (!gpu.is_ok()) return gpu.status().with_context("--devices " + list.text());
      d.gpu_index = next_gpu++;
      d.total_bytes = gpu->total_bytes;
      d.available_bytes = gpu->free_bytes;
      d.label = gpu->label;
    }
    devices.push_back(std::move(d));
  }
  return devices;
}

}  // namespace

Result<std::vector<RuntimeDevice>> resolve_runtime_devices(const Checkpoint& checkpoint,
                                                           const DeviceRequest& options) {
  DMOE_ASSIGN_OR_RETURN(std::vector<RuntimeDevice> devices, resolve(options));
  // The budgets, from --device-memory / --expert-memory or what is free.
  const ModelConfig& config = checkpoint.config();
  BudgetRequest request;
  for (const RuntimeDevice& d : devices) {
    DeviceCapacity c;
    c.name = d.name;
    c.kind = d.kind;
    c.total_bytes = d.total_bytes;
    c.available_bytes = d.available_bytes;
    const auto it = options.devices.expert_memory.find(d.name);
    if (it != options.devices.expert_memory.end()) c.requested_bytes = it->second;
    request.devices.push_back(std::move(c));
  }
  request.dense_device = options.devices.first_cuda();
  request.node_expert_bytes = options.expert_memory_bytes;
  request.host_reserved_bytes = options.host_reserved_bytes;
  if (request.dense_device >= 0) {
    request.dense_bytes = backend::gpu_dense_footprint(config, options.devices);
    // The host keeps its copy of the dense part too.
    request.host_reserved_bytes += checkpoint.dense_bytes();
  } else {
    request.dense_bytes = checkpoint.dense_bytes();
    request.kv_cache_bytes =
        static_cast<uint64_t>(std::max<int64_t>(options.kv_cache_tokens, 0)) *
        static_cast<uint64_t>(host_kv_bytes_per_position(config, options.kv_element));
    request.workspace_bytes = kCpuWorkspaceBytes;
  }
  DMOE_ASSIGN_OR_RETURN(std::vector<uint64_t> budgets, plan_expert_budgets(request));
  for (size_t d = 0; d < devices.size(); ++d) devices[d].expert_budget_bytes = budgets[d];
  return devices;
}

}  // namespace dancemoe
