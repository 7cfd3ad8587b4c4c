#include "common/base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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
  void* data = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd.get(), 0);
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

}  // namespace dancemoe
