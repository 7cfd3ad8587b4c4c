// HostBuffer: an owned, 64-byte aligned block of ordinary (anonymous) host
// memory. Weights are read into these rather than used through a
// memory-mapped file: compute over mmap'd file pages runs far below memory
// bandwidth on the virtual machines we target, and file-backed pages would
// count twice against the resident-memory budget. Large buffers ask the
// kernel for transparent huge pages to cut TLB misses on streaming reads.
// Freed mappings of up to 8 MiB (32 MiB in all, process-wide) are kept for
// the next buffer of the same size, so memory that comes and goes per
// request (KV caches) does not fault its pages in again each time; their
// bytes are whatever the previous owner left.
// Movable, not copyable; the bytes are not initialised.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/base/status.h"

namespace dancemoe {

class HostBuffer {
 public:
  HostBuffer() = default;
  ~HostBuffer();
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  // resource_exhausted (with the size) when the memory cannot be had.
  static Result<HostBuffer> allocate(size_t n_bytes);

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();

  void* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_size_ = 0;  // nonzero when the block came from mmap
};

}  // namespace dancemoe
