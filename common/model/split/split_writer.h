// Writing split checkpoints (split_index.h, docs/partial-checkpoints.md):
//
//   write_split(source, out)                    `dancemoe model split`: the
//       dense part (dense.bin), every expert the source has on disk as its
//       own file, the index with every expert's SHA-256, config and
//       tokenizer;
//   write_split(source, out, {.headers_only})   `dancemoe model headers`:
//       the same without any weights -- what the scheduler (and a
//       `--role experts` node that fetches everything) needs.
//
// The source may be a HuggingFace directory, a GGUF model or another split
// checkpoint; the output has the source's model id (checked by reopening
// it). Experts are read once to hash them, unless the source already has
// their digests (a manifest or a split index) and no file is written; with
// a manifest, every expert read is checked against it first, so a corrupt
// source is refused rather than split.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/base/status.h"
#include "common/model/checkpoint.h"

namespace dancemoe {

struct SplitOptions {
  bool headers_only = false;
  // Replace the files of an existing split in `out` (else `out` must not
  // exist or be empty).
  bool force = false;
  LoadProgress progress;  // bytes read from the source
};

struct SplitSummary {
  std::string model_id;
  uint64_t dense_bytes = 0;      // written to dense.bin
  int64_t n_expert_files = 0;    // written to experts/
  uint64_t expert_bytes = 0;     // in those files
  int64_t n_experts_absent = 0;  // not on the source's disk (a split source)
};

Result<SplitSummary> write_split(const Checkpoint& source, const std::filesystem::path& out,
                                 const SplitOptions& options = {});

}  // namespace dancemoe
