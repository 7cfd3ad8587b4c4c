// What the CUDA runtime says about the devices of this machine, in plain
// C++ types for the backend adapter, the tests and the benchmarks.
// Thread-safe (the CUDA runtime is).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_types.h"

namespace dancemoe::kernels::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // e.g. "NVIDIA H100 80GB HBM3"
  int compute_major = 0;
  int compute_minor = 0;
  int n_multiprocessors = 0;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  // 2 (DDR) x memory clock x bus width: the datasheet peak.
  double peak_bandwidth_bytes_per_s = 0;
};

// Number of usable devices; 0 with *why set when there are none (no driver,
// no device, a driver older than this runtime).
int device_count(std::string* why);

// False with *error set when the ordinal is not a usable device.
bool device_info(int ordinal, DeviceInfo* info, std::string* error);

// The pending error of the calling thread's device, cleared; empty if none.
std::string take_last_error();

// "cudaErrorMemoryAllocation: out of memory" for a cudaError_t value.
std::string error_string(int cuda_error);

}  // namespace dancemoe::kernels::cuda
