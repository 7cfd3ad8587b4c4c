#include "common/base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "common/base/unique_fd.h"

namespace dancemoe {
namespace {

// [offset, offset + n) widened to whole pages.
void page_range(const uint8_t* base, uint64_t offset, uint64_t n, uint8_t** start, size_t* len) {
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t begin = offset / page * page;
  *start = const_cast<uint8_t*>(base) + begin;
  *len = static_cast<size_t>(offset + n - begin);
}

constexpr size_t kHugePage = size_t{2} << 20;

// The file mapped read-only, at a 2 MiB-aligned address when it is that big
// (a 2 MiB folio can be mapped by one entry only where the address and the
// file offset agree modulo 2 MiB): a 2 MiB-larger range is reserved, the file
// mapped over its first aligned address, and the slack given back.
void* map_aligned(int fd, size_t size) {
  if (size < kHugePage) return ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  void* reserved = ::mmap(nullptr, size + kHugePage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reserved == MAP_FAILED) return MAP_FAILED;
  const auto base = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  void* data =
      ::mmap(reinterpret_cast<void*>(aligned), size, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  if (data == MAP_FAILED) {
    ::munmap(reserved, size + kHugePage);
    return MAP_FAILED;
  }
  if (aligned > base) ::munmap(reserved, aligned - base);
  const uintptr_t end = aligned + size, reserved_end = base + size + kHugePage;
  // munmap works on whole pages: the tail slack starts at the page after `end`.
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t tail = (end + page - 1) / page * page;
  if (reserved_end > tail) ::munmap(reinterpret_cast<void*>(tail), reserved_end - tail);
  return data;
}

// Reads one byte of every page of [p, p + n), so that each is faulted in.
void touch(const uint8_t* p, size_t n) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < n; i += page) sink = sink + p[i];
  (void)sink;
}

}  // namespace

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

Result<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return not_found(path.string() + ": cannot open (" + std::strerror(errno) + ")");
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    return unavailable(path.string() + ": cannot stat (" + std::strerror(errno) + ")");
  }
  MappedFile file;
  file.path_ = path;
  if (st.st_size == 0) return file;
  void* data = map_aligned(fd.get(), static_cast<size_t>(st.st_size));
  if (data == MAP_FAILED) {
    return unavailable(path.string() + ": cannot map " + std::to_string(st.st_size) + " bytes (" +
                       std::strerror(errno) + ")");
  }
  file.data_ = static_cast<const uint8_t*>(data);
  file.size_ = static_cast<size_t>(st.st_size);
  return file;
}

void MappedFile::will_need(uint64_t offset, uint64_t n) const {
  if (data_ == nullptr || n == 0 || offset + n > size_) return;
  uint8_t* start;
  size_t len;
  page_range(data_, offset, n, &start, &len);
  (void)::madvise(start, len, MADV_WILLNEED);
}

void MappedFile::dont_need(uint64_t offset, uint64_t n) const {
  if (data_ == nullptr || n == 0 || offset + n > size_) return;
  uint8_t* start;
  size_t len;
  page_range(data_, offset, n, &start, &len);
  (void)::madvise(start, len, MADV_DONTNEED);
}

void MappedFile::drop_pages_around(uint64_t offset, uint64_t n) const {
  if (data_ == nullptr || n == 0 || offset + n > size_) return;
  constexpr uint64_t kWindow = uint64_t{2} << 20;
  const uint64_t begin = offset / kWindow * kWindow;
  const uint64_t end = std::min<uint64_t>((offset + n + kWindow - 1) / kWindow * kWindow, size_);
  // data_ is page-aligned and so is begin; the kernel rounds the length up
  // to whole pages, all inside the mapping.
  (void)::madvise(const_cast<uint8_t*>(data_) + begin, static_cast<size_t>(end - begin),
                  MADV_DONTNEED);
}

uint64_t MappedFile::huge_mapped_bytes() const {
  if (data_ == nullptr) return 0;
  std::ifstream smaps("/proc/self/smaps");
  char start[32];
  std::snprintf(start, sizeof start, "%lx-", reinterpret_cast<unsigned long>(data_));
  std::string line;
  bool ours = false;
  while (std::getline(smaps, line)) {
    // A mapping's header line is "start-end perms ...", its fields "Name:  value kB".
    const size_t dash = line.find('-');
    if (dash != std::string::npos && dash < line.find(' ')) {
      ours = line.rfind(start, 0) == 0;
    } else if (ours && line.rfind("FilePmdMapped:", 0) == 0) {
      return std::strtoull(line.c_str() + 14, nullptr, 10) * 1024;
    }
  }
  return 0;
}

MappedFile::HugePages MappedFile::prefer_huge_pages() const {
  if (size_ < 2 * kHugePage) return HugePages::kTooSmall;
  auto* data = const_cast<uint8_t*>(data_);
  (void)::madvise(data, size_, MADV_HUGEPAGE);
  // The probe: the last whole 2 MiB window (the header, read already, is at
  // the front; the window is touched now in any case).
  const size_t window = (size_ / kHugePage - 1) * kHugePage;
  touch(data_ + window, kHugePage);
  if (huge_mapped_bytes() > 0) return HugePages::kAlreadyHuge;
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return HugePages::kNotAvailable;
  // Unmap the window here (our entries keep its pages cached), drop it from
  // the page cache, read it back through the mapping.
  (void)::madvise(data + window, kHugePage, MADV_DONTNEED);
  (void)::posix_fadvise(fd.get(), static_cast<off_t>(window), kHugePage, POSIX_FADV_DONTNEED);
  touch(data_ + window, kHugePage);
  if (huge_mapped_bytes() == 0) return HugePages::kNotAvailable;
  // The kernel does: drop the rest too (posix_fadvise leaves pages that
  // some process maps, so unmap ours first; their contents come back from
  // the file, unchanged).
  (void)::madvise(data, window, MADV_DONTNEED);
  (void)::posix_fadvise(fd.get(), 0, static_cast<off_t>(window), POSIX_FADV_DONTNEED);
  if (window + kHugePage < size_) {
    (void)::madvise(data + window + kHugePage, size_ - window - kHugePage, MADV_DONTNEED);
    (void)::posix_fadvise(fd.get(), static_cast<off_t>(window + kHugePage), 0, POSIX_FADV_DONTNEED);
  }
  return HugePages::kReread;
}

}  // namespace dancemoe
