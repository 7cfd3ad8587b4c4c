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
  // Drops this process's page-table entries for [offset, offset + n) and
  // for the rest of the 2 MiB-aligned windows around it, within the file
  // (the pages stay in the page cache; a later read maps them again): for
  // bytes copied out of the mapping, so that they stop counting in its RSS.
  // The windows because reading a tensor maps its neighbours' pages too
  // (fault-around, large folios): dropping exactly each copied tensor's
  // bytes left ~60 MB of already-copied neighbours mapped by the end of
  // loading the medium Q4_K_M file, the load's RSS peak. A neighbour still
  // to be read faults its pages back in.
  void drop_pages_around(uint64_t offset, uint64_t n) const;

  // Asks for the file's pages in 2 MiB page-cache folios, each mapped by one
  // page-table entry (open() places mappings of 2 MiB and more at 2 MiB-
  // aligned addresses for this): weights streamed from the mapping then miss
  // the TLB far less often -- `dancemoe bench` Q8_0 medium decode 1.07-1.12x,
  // 3 interleaved rounds on a Zen 4 VM. madvise(MADV_HUGEPAGE) makes the
  // kernel read the file in such folios from now on where it can (THP not
  // "never", a filesystem with large folios: ext4 and xfs on recent Linux).
  // Pages already cached in small folios stay small, so a probe drops one
  // 2 MiB window of the file from the page cache and reads it back: if it
  // comes back huge, every cached page of the file that no process maps is
  // dropped too, to be read back from disk in 2 MiB folios on first touch
  // (once: later opens find them huge). A hint: nothing here fails.
  enum class HugePages {
    kTooSmall,      // under two huge pages: nothing asked
    kAlreadyHuge,   // the probe window was mapped huge at once
    kReread,        // the probe came back huge: the cached file was dropped
    kNotAvailable,  // the kernel gives this file no huge folios
  };
  HugePages prefer_huge_pages() const;
  // Bytes of this mapping mapped by 2 MiB entries now (/proc/self/smaps
  // FilePmdMapped); 0 where unknown.
  uint64_t huge_mapped_bytes() const;

 private:
  void release();

  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace dancemoe
