// CudaDevice: one GPU as the CUDA backend uses it -- its ordinal and
// properties, a memory budget that every allocation is counted against,
// the compute stream, and allocations whose failure is a clear
// resource_exhausted error naming the device, the bytes wanted and the
// bytes free. DeviceMemory and PinnedMemory are the RAII owners of device
// and page-locked host memory; each keeps its CudaDevice alive.
//
// Thread-safety: allocation accounting is atomic; the stream is used by one
// forward at a time (the engines' contract).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/backend/memory_plan.h"
#include "common/base/status.h"
#include "kernels/cuda/cuda_types.h"
#include "kernels/cuda/device.cuh"

namespace dancemoe::backend::cuda {

class CudaDevice;

// Whether an allocation counts against the device's budget. kOnTop: memory
// made after load, a few MiB each, that the budget does not cover (the
// expert service's per-worker engine workspaces); only free memory limits it.
enum class Budget { kCounted, kOnTop };

class DeviceMemory {
 public:
  DeviceMemory() = default;
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* data() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  uint64_t size() const { return size_; }

 private:
  friend class CudaDevice;
  void release();

  std::shared_ptr<CudaDevice> device_;
  void* data_ = nullptr;
  uint64_t size_ = 0;
  bool counted_ = true;  // size_ is in the device's used_bytes()
};

class PinnedMemory {
 public:
  PinnedMemory() = default;
  ~PinnedMemory();
  PinnedMemory(PinnedMemory&& other) noexcept;
  PinnedMemory& operator=(PinnedMemory&& other) noexcept;
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;

  static Result<PinnedMemory> allocate(uint64_t bytes, const std::string& what);
  void* data() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  uint64_t size() const { return size_; }

 private:
  void release();
  void* data_ = nullptr;
  uint64_t size_ = 0;
};

class CudaDevice : public std::enable_shared_from_this<CudaDevice> {
 public:
  // unavailable when the ordinal is not a usable device. budget_bytes 0:
  // everything free now.
  static Result<std::shared_ptr<CudaDevice>> open(int ordinal, uint64_t budget_bytes);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  int ordinal() const { return info_.ordinal; }
  const kernels::cuda::DeviceInfo& info() const { return info_; }
  // "cuda:0 (NVIDIA H100 80GB HBM3)"
  std::string label() const;
  kernels::cuda::Stream stream() const { return stream_; }

  uint64_t budget_bytes() const { return budget_bytes_; }
  uint64_t used_bytes() const { return used_bytes_.load(); }
  uint64_t free_bytes() const;  // as the driver says now

  // Device memory counted against the budget (unless kOnTop); `what` names
  // it in errors.
  Result<DeviceMemory> allocate(uint64_t bytes, const std::string& what,
                                Budget budget = Budget::kCounted);

  // Makes this device current for the calling thread.
  void make_current() const;
  // internal error naming `what` and the device when the device has a
  // pending error (a failed launch, a sticky fault).
  Status check(const std::string& what) const;
  // Waits for the compute stream; an error as check().
  Status synchronize(const std::string& what) const;

 private:
  friend class DeviceMemory;
  CudaDevice() = default;

  kernels::cuda::DeviceInfo info_;
  kernels::cuda::Stream stream_ = nullptr;
  uint64_t budget_bytes_ = 0;
  std::atomic<uint64_t> used_bytes_{0};
};

}  // namespace dancemoe::backend::cuda
