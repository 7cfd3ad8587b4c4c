// SplitIndex: the index of a split checkpoint -- a model directory that
// holds the dense part and a subset (possibly none) of the experts as one
// file each, written by `dancemoe model split` or, with no weights at all,
// `dancemoe model headers` (docs/partial-checkpoints.md). Whatever the
// source's format (safetensors or GGUF), the directory is:
//
//   config.json, generation_config.json, tokenizer.json,
//   tokenizer_config.json      (copied, or from a GGUF's metadata)
//   dancemoe-manifest.json     (copied when the source has one)
//   dancemoe-split.json        this index
//   dense.bin                  the dense tensors, each at a 64-aligned
//                              offset (absent in a header-only copy)
//   experts/L0003-E0017.bin    one file per expert held: its weights in
//                              the checkpoint layout -- gate, up and down
//                              back to back in their stored format (what a
//                              peer sends, what ExpertStore::install takes)
//
// dancemoe-split.json:
//   {"format": "dancemoe-split-v1",
//    "model_id": "<the source's model id>",
//    "manifest_identity": "<64 hex>"      (a GGUF source's, when it has one)
//    "dense_file": "dense.bin" | null,    (null: a header-only copy)
//    "dense": [{"name", "type", "shape", "offset", "bytes"}, ...],
//    "expert_layers": [{"layer": 3, "gate": {"type", "shape", "bytes"},
//                       "up": {...}, "down": {...},
//                       "sha256": ["<64 hex>", ... one per expert]}, ...]}
//
// The SHA-256 of every expert is of its bytes as stored in its file, also
// for GGUF block formats: a node checks every expert it reads from its
// files or fetches from a peer against them, so a partial GGUF checkpoint
// is verified although a GGUF file itself carries no digests.
//
// A plain value; thread-safe to read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/model/expert_manifest.h"
#include "common/model/expert_ref.h"
#include "common/model/model_config.h"
#include "kernels/kernels.h"

namespace dancemoe {

struct SplitTensor {
  std::string name;  // HF name
  kernels::WeightType type = kernels::WeightType::kF32;
  std::vector<int64_t> shape;
  uint64_t offset = 0;  // in dense.bin (dense tensors) or in the expert's file
  uint64_t n_bytes = 0;
};

struct SplitExpertLayer {
  int64_t layer = 0;
  // Offsets within an expert's file: gate at 0, up after it, down last.
  SplitTensor gate, up, down;
  std::vector<Digest> digests;  // [n_experts]

  uint64_t expert_bytes() const { return gate.n_bytes + up.n_bytes + down.n_bytes; }
};

struct SplitIndex {
  static constexpr const char* kFileName = "dancemoe-split.json";
  static constexpr const char* kDenseFile = "dense.bin";
  static constexpr const char* kExpertsDir = "experts";
  static constexpr uint64_t kAlign = 64;

  std::string model_id;
  std::optional<Digest> manifest_identity;
  bool has_dense = true;  // false: a header-only copy
  std::vector<SplitTensor> dense;
  std::vector<SplitExpertLayer> expert_layers;  // every MoE layer, in model order

  // True when `dir` holds a split index.
  static bool present(const std::filesystem::path& dir);
  // Reads and checks `dir`/kFileName against `config`: every field's type,
  // each tensor's bytes against its type and shape, every MoE layer listed
  // once with one digest per expert, dense tensors inside dense.bin without
  // overlap. Errors name the file and the field.
  static Result<SplitIndex> read(const std::filesystem::path& dir, const ModelConfig& config);
  // The same checks on the index's text; errors name `source`.
  static Result<SplitIndex> parse(std::string_view text, const std::string& source,
                                  const ModelConfig& config);
  // Writes `dir`/kFileName atomically.
  Status write(const std::filesystem::path& dir) const;

  // nullptr when `layer` is not listed.
  const SplitExpertLayer* find_layer(int64_t layer) const;
  // The per-expert digests as a manifest-shaped table (ExpertManifest).
  ExpertManifest digests(const ModelConfig& config) const;
  // Bytes dense.bin must have: the end of its last tensor.
  uint64_t dense_file_bytes() const;
};

// Bytes of a tensor of `type` and `shape` ([rows, cols] or [n]).
uint64_t tensor_bytes(kernels::WeightType type, const std::vector<int64_t>& shape);

}  // namespace dancemoe
