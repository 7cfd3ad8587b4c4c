#include "common/tensor/host_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <utility>

namespace dancemoe {
namespace {

// Below this, the heap. KV caches of short sequences and the prefix cache's
// copies come and go by the thousand under load: from the heap they
// fragmented it (the node's RSS grew ~15-40 % beyond the prefix cache's
// budget over a minute); mapped, each returns its pages when freed.
constexpr size_t kMmapThreshold = 64u << 10;
constexpr size_t kHugePage = 2u << 20;
constexpr size_t kPage = 4096;

}  // namespace

HostBuffer::~HostBuffer() { release(); }

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_size_(std::exchange(other.mapped_size_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_size_ = std::exchange(other.mapped_size_, 0);
  }
  return *this;
}

void HostBuffer::release() {
  if (data_ == nullptr) return;
  if (mapped_size_ != 0) {
    ::munmap(data_, mapped_size_);
  } else {
    std::free(data_);
  }
  data_ = nullptr;
  size_ = 0;
  mapped_size_ = 0;
}

Result<HostBuffer> HostBuffer::allocate(size_t n_bytes) {
  HostBuffer buffer;
  buffer.size_ = n_bytes;
  if (n_bytes >= kMmapThreshold) {
    // Transparent huge pages only back whole 2 MiB-aligned extents, and mmap
    // aligns to 4 KiB: map one huge page extra and trim both ends so the block
    // starts on a huge page. Its length is rounded to 4 KiB only, so a 3 MiB
    // expert gets one huge page plus small pages rather than 4 MiB resident.
    const size_t mapped = (n_bytes + kPage - 1) / kPage * kPage;
    void* raw = ::mmap(nullptr, mapped + kHugePage, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
      return resource_exhausted("cannot allocate " + std::to_string(n_bytes) +
                                " bytes of host memory");
    }
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > start) ::munmap(raw, aligned - start);
    const size_t tail = (start + mapped + kHugePage) - (aligned + mapped);
    if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + mapped), tail);
    void* p = reinterpret_cast<void*>(aligned);
    ::madvise(p, mapped, MADV_HUGEPAGE);  // advisory; ignored where THP is off
    buffer.data_ = p;
    buffer.mapped_size_ = mapped;
    return buffer;
  }
  void* p = nullptr;
  if (::posix_memalign(&p, 64, n_bytes == 0 ? 64 : n_bytes) != 0) {
    return resource_exhausted("cannot allocate " + std::to_string(n_bytes) +
                              " bytes of host memory");
  }
  buffer.data_ = p;
  return buffer;
}

}  // namespace dancemoe
