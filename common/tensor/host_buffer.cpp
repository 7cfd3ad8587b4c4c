#include "common/tensor/host_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

namespace dancemoe {
namespace {

// Below this, the heap. KV caches of short sequences and the prefix cache's
// copies come and go by the thousand under load: from the heap they
// fragmented it (the node's RSS grew ~15-40 % beyond the prefix cache's
// budget over a minute); mapped, each returns its pages when freed.
constexpr size_t kMmapThreshold = 64u << 10;
constexpr size_t kHugePage = 2u << 20;
constexpr size_t kPage = 4096;

// Freed mappings kept for the next allocation of the same (page-rounded)
// size. Those KV caches come and go at every request: a fresh mapping costs
// four syscalls and a fault per page (each page zeroed), and unmapping one
// costs a TLB shootdown on every core the process ran on -- 0.3-0.8 ms per
// finished request in the small preset's serving benchmark (the sequence's
// cache, the prefix cache's copy of it, the copy restored into the next
// one), on the scheduler's thread while the pool waits. A reused mapping is
// already resident: the copies then run at memory speed. Bounded: mappings
// up to kMaxCachedMapping, kCachedBytes in all (the oldest unmapped first),
// so at most that much freed memory stays resident.
constexpr size_t kMaxCachedMapping = 8u << 20;
constexpr size_t kCachedBytes = 32u << 20;

class MappingCache {
 public:
  // A cached mapping of exactly `mapped` bytes, or null.
  void* take(size_t mapped) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = free_.rbegin(); it != free_.rend(); ++it) {  // the most recent first
      if (it->size != mapped) continue;
      void* p = it->data;
      bytes_ -= mapped;
      free_.erase(std::next(it).base());
      return p;
    }
    return nullptr;
  }
  // Keeps the mapping, or unmaps it (too large); unmaps the oldest ones
  // beyond the budget.
  void give(void* data, size_t mapped) {
    if (mapped > kMaxCachedMapping) {
      ::munmap(data, mapped);
      return;
    }
    std::vector<Mapping> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back({data, mapped});
      bytes_ += mapped;
      while (bytes_ > kCachedBytes) {
        dropped.push_back(free_.front());
        bytes_ -= free_.front().size;
        free_.pop_front();
      }
    }
    for (const Mapping& m : dropped) ::munmap(m.data, m.size);
  }

 private:
  struct Mapping {
    void* data;
    size_t size;
  };
  std::mutex mutex_;
  std::deque<Mapping> free_;  // oldest first
  size_t bytes_ = 0;
};

// Never destroyed: buffers may be freed by other static destructors.
MappingCache& mapping_cache() {
  static MappingCache* cache = new MappingCache();
  return *cache;
}

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
    mapping_cache().give(data_, mapped_size_);
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
    if (void* reused = mapping_cache().take(mapped)) {
      buffer.data_ = reused;
      buffer.mapped_size_ = mapped;
      return buffer;
    }
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
