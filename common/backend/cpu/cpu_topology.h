// CpuTopology: the cores this process may run on, the machine's NUMA nodes
// and their memory -- and how the cpu entries of --devices map onto them
// (common/backend/device_options.h):
//
//   cpu     every allowed core; memory: MemAvailable of the machine
//   cpu:N   with two or more NUMA nodes: node N's allowed cores and memory
//           (node N must exist and have allowed cores);
//           with one NUMA node: the N-th of k equal slices of the allowed
//           cores, k the number of cpu:N devices listed (which must be
//           cpu:0 .. cpu:k-1), each with an equal share of MemAvailable.
//
// read() looks at /proc and /sys; tests build topologies by hand. Values
// only; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/backend/device_options.h"
#include "common/base/status.h"

namespace dancemoe::backend {

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;  // allowed cores only
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};

struct CpuTopology {
  std::vector<int> allowed_cpus;  // sorted
  std::vector<NumaNode> numa_nodes;
  uint64_t total_bytes = 0;      // MemTotal
  uint64_t available_bytes = 0;  // MemAvailable

  static CpuTopology read();
};

// One cpu device resolved to cores and memory.
struct CpuSlice {
  std::string name;       // "cpu", "cpu:1"
  std::vector<int> cpus;  // the cores its threads run on; empty for "cpu" (not pinned)
  int n_threads = 1;
  int numa_node = -1;            // the NUMA node its memory is bound to, or -1
  uint64_t total_bytes = 0;      // memory of the device (its node, or its share)
  uint64_t available_bytes = 0;  // of which free now
};

// Resolves the cpu entries of `devices` (others are skipped), in order.
// `n_threads` sizes the "cpu" device (0: every allowed core). invalid_argument
// naming the device and what this machine has for a node that does not
// exist or a slice index out of range.
Result<std::vector<CpuSlice>> resolve_cpu_devices(const std::vector<DeviceName>& devices,
                                                  const CpuTopology& topology, int n_threads);

// "0-3,8,10-11" (the /sys cpulist form) -> {0,1,2,3,8,10,11}; empty on a malformed list.
std::vector<int> parse_cpu_list(const std::string& text);

}  // namespace dancemoe::backend
