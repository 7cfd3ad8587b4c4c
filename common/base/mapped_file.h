// MappedFile: a whole file mapped read-only into memory (mmap, MAP_SHARED so
// that every process mapping the same file shares its page-cache pages).
// Untouched pages cost nothing; pages are read on first access. Movable, not
// copyable; the bytes stay valid until the object is destroyed. Thread-safe
// to read from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

#include "common/base/status.h"

namespace dancemoe {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // not_found when the file cannot be opened, unavailable when it cannot be
  // mapped. An empty file maps to an empty span.
  static Result<MappedFile> open(const std::filesystem::path& path);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

  // Hints that [offset, offset + n) will be read soon / not again (madvise);
  // failures are ignored (a hint).
  void will_need(uint64_t offset, uint64_t n) const;
  void dont_need(uint64_t offset, uint64_t n) const;

 private:
  void release();

  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dancemoe
