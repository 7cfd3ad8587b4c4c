// ExpertManifest: the SHA-256 of every routed expert's weights, written
// beside a checkpoint (docs/security.md, "Weights you can trust").
//
// The digest of an expert is over its bytes in the checkpoint's layout --
// gate, up and down back to back, each in its stored dtype -- which is what
// ExpertStore holds, what a peer sends when a node fetches an expert, and
// what ExpertStore::install() takes. The manifest is the file
// `dancemoe-manifest.json` in the model directory:
//
//   {"format": "dancemoe-expert-manifest-v1",
//    "experts": {"<layer>": ["<64 hex>", ...one per expert...], ...}}
//
// with every MoE layer and every expert of it. It is written by
// `dancemoe make-model` and by `dancemoe model manifest --model DIR`, and is
// covered by the model id (Checkpoint::model_id hashes identity()), so
// nodes that share a model id share the digests. ExpertStore checks each
// expert against it when the expert becomes resident -- loaded from the
// files (a migration, the offload cache) or installed from a peer's bytes --
// lazily, one expert at a time, never the whole model up front. A
// checkpoint without a manifest (real HF checkpoints ship none) still loads,
// unverified, with a note in the log.
//
// A plain value; thread-safe to read.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/model/expert_ref.h"
#include "common/model/model_config.h"

namespace dancemoe {

class Checkpoint;

using Digest = std::array<uint8_t, 32>;

class ExpertManifest {
 public:
  static constexpr const char* kFileName = "dancemoe-manifest.json";

  ExpertManifest() = default;
  // A table of digests from elsewhere -- `per_layer[layer]` (empty for a
  // dense layer), e.g. those a split checkpoint's index records
  // (split/split_index.h); `source` names it in check()'s messages.
  ExpertManifest(std::vector<std::vector<Digest>> per_layer, std::string source)
      : digests_(std::move(per_layer)), source_(std::move(source)) {}

  // The manifest of `dir`, nullopt when it has none; errors name the file
  // and the entry (a missing or extra layer or expert, a malformed digest).
  static Result<std::optional<ExpertManifest>> read(const std::filesystem::path& dir,
                                                    const ModelConfig& config);
  // Reads every expert of `checkpoint` and writes `dir`/kFileName (atomically).
  // `progress(done, total)` in bytes, may be empty.
  static Result<ExpertManifest> write(const Checkpoint& checkpoint,
                                      const std::function<void(uint64_t, uint64_t)>& progress = {});

  // nullptr for an expert the manifest does not list.
  const Digest* find(ExpertRef key) const;
  // ok when `digest` is the expert's; invalid_argument naming the expert and
  // both digests otherwise.
  Status check(ExpertRef key, const Digest& digest) const;
  // What the model id covers: SHA-256 over every (layer, expert, digest).
  Digest identity() const;
  size_t size() const;

 private:
  // [layer] -> digests of its experts (empty for a dense layer).
  std::vector<std::vector<Digest>> digests_;
  std::string source_ = kFileName;
};

// A digest written as 64 lower-case hex characters; nullopt otherwise.
std::optional<Digest> digest_from_hex(std::string_view text);

// The digest of one expert's three tensors, each given as its bytes, in order.
Digest expert_digest(std::span<const uint8_t> gate, std::span<const uint8_t> up,
                     std::span<const uint8_t> down);

}  // namespace dancemoe
