// ExpertFiles: the `experts/` directory of a split checkpoint
// (split_index.h) -- one file per expert the node has on disk, named
// L<layer>-E<expert>.bin (four digits each, more when needed), holding the
// expert's weights in the checkpoint layout. It is also the node's local
// expert store: experts fetched from peers are written here, so a restart
// does not fetch them again (docs/partial-checkpoints.md).
//
// Writes are atomic (a temporary file in the same directory, fsync, rename):
// a crash or a full disk never leaves a truncated expert file under its
// final name. Reads check the file's size against the expert's.
//
// Thread-safe: no state beyond the directory's path; concurrent writes of
// one expert each write their own temporary file and the last rename wins
// (same bytes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/model/expert_ref.h"

namespace dancemoe {

class ExpertFiles {
 public:
  explicit ExpertFiles(std::filesystem::path dir) : dir_(std::move(dir)) {}

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path path_of(ExpertRef key) const;
  static std::string file_name(ExpertRef key);

  // A regular file of exactly `expected_bytes` is there.
  bool exists(ExpertRef key, uint64_t expected_bytes) const;

  // Reads `n_bytes` at `offset` of the expert's file, after checking that
  // the file has exactly `expected_bytes`: not_found naming the file when
  // it is missing, invalid_argument naming it and both sizes when its size
  // is wrong, unavailable on a read error.
  Status read(ExpertRef key, uint64_t expected_bytes, uint64_t offset, void* dst,
              uint64_t n_bytes) const;

  // Writes the expert's file atomically, creating the directory if needed.
  // resource_exhausted naming the file when the disk is full (ENOSPC,
  // EDQUOT, EFBIG), unavailable for another failure; the temporary file is
  // removed either way.
  Status write(ExpertRef key, std::span<const uint8_t> bytes) const;

  // Removes the file (a copy found corrupt); false when there was none.
  bool remove(ExpertRef key) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace dancemoe
