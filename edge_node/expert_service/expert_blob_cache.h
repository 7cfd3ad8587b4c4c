// ExpertBlobCache: experts serialised for transfer to a peer that lacks the
// model files (migration, DESIGN.md §5.6; weight gathering) -- resident ones,
// or, with a partial checkpoint, ones this node has only on disk (read from
// their files and checked against the digests first): the weight bytes as the
// store holds them -- gate, up, down back to back in their held format
// (quantized blocks for a GGUF model or --expert-type), exactly what
// ExpertStore::install() takes -- and their SHA-256. A peer
// fetches an expert chunk by chunk, so the serialised form and its hash are
// kept for the few experts being fetched (LRU, bounded by count).
//
// Thread-safe (every expert-service worker shares one).
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "common/base/status.h"
#include "common/inference/expert_store.h"

namespace dancemoe::node {

struct ExpertBlob {
  ExpertRef key;
  std::vector<uint8_t> bytes;
  std::array<uint8_t, 32> sha256{};
};

// Serialises a resident expert (gate, up, down back to back).
std::shared_ptr<const ExpertBlob> serialize_expert(const ExpertWeights& weights);

class ExpertBlobCache {
 public:
  explicit ExpertBlobCache(const ExpertStore& store, size_t max_entries = 4);

  // not_found when the expert is neither resident here nor on this node's
  // disk in the held format.
  Result<std::shared_ptr<const ExpertBlob>> get(ExpertRef key);

 private:
  Result<std::shared_ptr<const ExpertBlob>> read_from_disk(ExpertRef key) const;

  const ExpertStore& store_;
  size_t max_entries_;
  std::mutex mutex_;
  std::list<std::shared_ptr<const ExpertBlob>> entries_;  // most recently used first
};

}  // namespace dancemoe::node
