#include "common/backend/cuda/cuda_device.h"

#include <cuda_runtime.h>

namespace dancemoe::backend::cuda {

void DeviceMemory::release() {
  if (data_ != nullptr) {
    device_->make_current();
    cudaFree(data_);
    if (counted_) device_->used_bytes_ -= size_;
  }
  data_ = nullptr;
  size_ = 0;
  device_.reset();
}

DeviceMemory::~DeviceMemory() { release(); }

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : device_(std::move(other.device_)),
      data_(other.data_),
      size_(other.size_),
      counted_(other.counted_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  if (this != &other) {
    release();
    device_ = std::move(other.device_);
    data_ = other.data_;
    size_ = other.size_;
    counted_ = other.counted_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Result<PinnedMemory> PinnedMemory::allocate(uint64_t bytes, const std::string& what) {
  PinnedMemory m;
  if (bytes == 0) return m;
  const cudaError_t e = cudaMallocHost(&m.data_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return resource_exhausted("page-locked host memory for " + what + ": wanted " +
                              format_bytes(bytes) + ": " + kernels::cuda::error_string(e));
  }
  m.size_ = bytes;
  return m;
}

void PinnedMemory::release() {
  if (data_ != nullptr) cudaFreeHost(data_);
  data_ = nullptr;
  size_ = 0;
}

PinnedMemory::~PinnedMemory() { release(); }

PinnedMemory::PinnedMemory(PinnedMemory&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

PinnedMemory& PinnedMemory::operator=(PinnedMemory&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Result<std::shared_ptr<CudaDevice>> CudaDevice::open(int ordinal, uint64_t budget_bytes) {
  std::string why;
  const int n = kernels::cuda::device_count(&why);
  if (ordinal >= n) {
    if (n == 0)
      return unavailable("cuda:" + std::to_string(ordinal) + ": no CUDA device (" + why + ")");
    return unavailable("cuda:" + std::to_string(ordinal) + ": this machine has " +
                       std::to_string(n) +
                       " CUDA device(s), cuda:0 to cuda:" + std::to_string(n - 1));
  }
  std::shared_ptr<CudaDevice> device(new CudaDevice());
  std::string error;
  if (!kernels::cuda::device_info(ordinal, &device->info_, &error)) return unavailable(error);
  if (device->info_.compute_major < 8) {
    return unavailable(device->label() + ": compute capability " +
                       std::to_string(device->info_.compute_major) + "." +
                       std::to_string(device->info_.compute_minor) +
                       " is too old (the bf16 tensor-core kernels need 8.0 or newer)");
  }
  device->make_current();
  cudaStream_t stream = nullptr;
  const cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return unavailable(device->label() +
                       ": cannot create a stream: " + kernels::cuda::error_string(e));
  }
  device->stream_ = stream;
  device->budget_bytes_ = budget_bytes > 0 ? budget_bytes : device->info_.free_bytes;
  return device;
}

CudaDevice::~CudaDevice() {
  if (stream_ != nullptr) {
    make_current();
    cudaStreamDestroy(stream_);
  }
}

std::string CudaDevice::label() const {
  return "cuda:" + std::to_string(info_.ordinal) + " (" + info_.name + ")";
}

uint64_t CudaDevice::free_bytes() const {
  make_current();
  size_t free_bytes = 0;
  size_t total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

Result<DeviceMemory> CudaDevice::allocate(uint64_t bytes, const std::string& what, Budget budget) {
  DeviceMemory m;
  if (bytes == 0) return m;
  const uint64_t used = used_bytes_.load();
  if (budget == Budget::kCounted && used + bytes > budget_bytes_) {
    return resource_exhausted(label() + ": out of memory for " + what + ": wanted " +
                              format_bytes(bytes) + ", " +
                              format_bytes(budget_bytes_ - std::min(used, budget_bytes_)) +
                              " free of this device's budget of " + format_bytes(budget_bytes_) +
                              " (" + format_bytes(free_bytes()) + " free on the device)");
  }
  make_current();
  const cudaError_t e = cudaMalloc(&m.data_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    m.data_ = nullptr;
    return resource_exhausted(label() + ": out of memory for " + what + ": wanted " +
                              format_bytes(bytes) + ", " + format_bytes(free_bytes()) +
                              " free on the device (" + kernels::cuda::error_string(e) + ")");
  }
  m.size_ = bytes;
  m.device_ = shared_from_this();
  m.counted_ = budget == Budget::kCounted;
  if (m.counted_) used_bytes_ += bytes;
  return m;
}

void CudaDevice::make_current() const { cudaSetDevice(info_.ordinal); }

Status CudaDevice::check(const std::string& what) const {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return Status::ok();
  return internal_error(label() + ": " + what + ": " + kernels::cuda::error_string(e));
}

Status CudaDevice::synchronize(const std::string& what) const {
  const cudaError_t e = cudaStreamSynchronize(stream_);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return internal_error(label() + ": " + what + ": " + kernels::cuda::error_string(e));
  }
  return check(what);
}

}  // namespace dancemoe::backend::cuda
