#include <cuda_runtime.h>

#include "kernels/cuda/device.cuh"

namespace dancemoe::kernels::cuda {

std::string error_string(int cuda_error) {
  const auto e = static_cast<cudaError_t>(cuda_error);
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = error_string(e);
    return 0;
  }
  if (n == 0 && why) *why = "the CUDA runtime reports no device";
  return n;
}

bool device_info(int ordinal, DeviceInfo* info, std::string* error) {
  cudaDeviceProp prop{};
  cudaError_t e = cudaGetDeviceProperties(&prop, ordinal);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (error) *error = "cuda:" + std::to_string(ordinal) + ": " + error_string(e);
    return false;
  }
  info->ordinal = ordinal;
  info->name = prop.name;
  info->compute_major = prop.major;
  info->compute_minor = prop.minor;
  info->n_multiprocessors = prop.multiProcessorCount;
  int clock_khz = 0;
  int bus_bits = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, ordinal);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal);
  info->peak_bandwidth_bytes_per_s = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0);
  int previous = 0;
  cudaGetDevice(&previous);
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  e = cudaSetDevice(ordinal);
  if (e == cudaSuccess) e = cudaMemGetInfo(&free_bytes, &total_bytes);
  cudaSetDevice(previous);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (error) *error = "cuda:" + std::to_string(ordinal) + ": " + error_string(e);
    return false;
  }
  info->total_bytes = total_bytes;
  info->free_bytes = free_bytes;
  return true;
}

std::string take_last_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? std::string() : error_string(e);
}

}  // namespace dancemoe::kernels::cuda
