// Helpers for the CUDA tests (label `cuda`): device detection with a visible
// skip, RAII device arrays, and the normalised error used by every parity
// check. Compiled only with the CUDA backend.
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/numeric.h"
#include "kernels/cuda/device.cuh"

namespace dancemoe::testing {

// True when a CUDA device is usable; otherwise prints why (once per test).
inline bool cuda_available() {
  static std::string why;
  static const int n = kernels::cuda::device_count(&why);
  if (n == 0) MESSAGE("SKIPPED: no CUDA device (" << why << ")");
  return n > 0;
}

#define DMOE_REQUIRE_CUDA() \
  if (!::dancemoe::testing::cuda_available()) return

#define DMOE_CUDA_OK(expr)                                                               \
  do {                                                                                   \
    const cudaError_t dmoe_e = (expr);                                                   \
    REQUIRE_MESSAGE(dmoe_e == cudaSuccess, #expr << ": " << cudaGetErrorString(dmoe_e)); \
  } while (0)

// Waits for the device and fails the test on any pending error.
inline void sync_and_check() {
  DMOE_CUDA_OK(cudaDeviceSynchronize());
  DMOE_CUDA_OK(cudaGetLastError());
}

template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : n_(n) {
    if (n > 0) DMOE_CUDA_OK(cudaMalloc(&data_, n * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  ~DeviceArray() {
    if (data_) cudaFree(data_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : data_(o.data_), n_(o.n_) {
    o.data_ = nullptr;
    o.n_ = 0;
  }

  T* get() const { return data_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() <= n_);
    if (!host.empty())
      DMOE_CUDA_OK(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    if (n_ > 0)
      DMOE_CUDA_OK(cudaMemcpy(host.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  void fill_bytes(int value) {
    if (n_ > 0) DMOE_CUDA_OK(cudaMemset(data_, value, n_ * sizeof(T)));
  }

 private:
  T* data_ = nullptr;
  size_t n_ = 0;
};

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = kernels::float_to_bf16(v[i]);
  return out;
}

inline std::vector<float> from_bf16(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = kernels::bf16_to_float(v[i]);
  return out;
}

// max_i |got_i - want_i| / max_i |want_i|
inline double normalised_error(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double max_diff = 0.0;
  double max_ref = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    max_diff = std::isnan(diff) ? INFINITY : std::fmax(max_diff, diff);
    max_ref = std::fmax(max_ref, std::fabs(static_cast<double>(want[i])));
  }
  return max_diff / (max_ref > 0.0 ? max_ref : 1.0);
}

}  // namespace dancemoe::testing
