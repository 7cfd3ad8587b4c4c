#include "edge_node/expert_service/expert_blob_cache.h"

#include <cstring>

#include "common/base/sha256.h"
#include "kernels/quant_format.h"

namespace dancemoe::node {
namespace {

size_t view_bytes(const kernels::WeightView& w) {
  return static_cast<size_t>(w.rows * kernels::weight_row_bytes(w.type, w.cols));
}

}  // namespace

std::shared_ptr<const ExpertBlob> serialize_expert(const ExpertWeights& weights) {
  auto blob = std::make_shared<ExpertBlob>();
  blob->key = weights.key;
  blob->bytes.reserve(weights.n_bytes);
  for (const kernels::WeightView* w : {&weights.gate, &weights.up, &weights.down}) {
    const auto* p = static_cast<const uint8_t*>(w->data);
    blob->bytes.insert(blob->bytes.end(), p, p + view_bytes(*w));
  }
  Sha256 hasher;
  hasher.update(blob->bytes);
  blob->sha256 = hasher.finish();
  return blob;
}

ExpertBlobCache::ExpertBlobCache(const ExpertStore& store, size_t max_entries)
    : store_(store), max_entries_(max_entries == 0 ? 1 : max_entries) {}

Result<std::shared_ptr<const ExpertBlob>> ExpertBlobCache::get(ExpertRef key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if ((*it)->key == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front();
      }
    }
  }
  std::shared_ptr<const ExpertWeights> weights = store_.get(key);
  if (weights == nullptr) {
    return not_found("expert " + std::to_string(key.expert) + " of layer " +
                     std::to_string(key.layer) + " is not resident on this node");
  }
  // Serialise and hash outside the lock: a few MB, other workers keep going.
  std::shared_ptr<const ExpertBlob> blob = serialize_expert(*weights);
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_front(blob);
  while (entries_.size() > max_entries_) entries_.pop_back();
  return blob;
}

}  // namespace dancemoe::node
