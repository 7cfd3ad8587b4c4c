#include "edge_node/expert_service/expert_blob_cache.h"

#include <cstring>

#include "common/base/sha256.h"
#include "kernels/interleave.h"
#include "kernels/quant_format.h"

namespace dancemoe::node {
namespace {

// Bytes of a view in the rows layout (what transfers carry, whatever the
// layout it is held in: kernels/interleave.h).
size_t rows_bytes(const kernels::WeightView& w) {
  return static_cast<size_t>(w.rows * kernels::weight_row_bytes(w.type, w.cols));
}

}  // namespace

std::shared_ptr<const ExpertBlob> serialize_expert(const ExpertWeights& weights) {
  auto blob = std::make_shared<ExpertBlob>();
  blob->key = weights.key;
  blob->bytes.reserve(weights.n_bytes);
  for (const kernels::WeightView* w : {&weights.gate, &weights.up, &weights.down}) {
    const size_t at = blob->bytes.size();
    blob->bytes.resize(at + rows_bytes(*w));
    kernels::copy_as_rows(*w, blob->bytes.data() + at);
  }
  Sha256 hasher;
  hasher.update(blob->bytes);
  blob->sha256 = hasher.finish();
  return blob;
}

// Partial checkpoints: an expert this node has on disk but does not hold
// can still be served, as stored -- when that is how this node holds it
// (no --expert-type conversion), the bytes a peer's install() takes.
Result<std::shared_ptr<const ExpertBlob>> ExpertBlobCache::read_from_disk(ExpertRef key) const {
  const Checkpoint& checkpoint = store_.checkpoint();
  if (!store_.check_key(key).is_ok() || !checkpoint.has_expert_weights(key) ||
      !store_.holds_as_stored(key)) {
    return not_found("expert " + std::to_string(key.expert) + " of layer " +
                     std::to_string(key.layer) + " is neither resident nor on disk on this node");
  }
  auto blob = std::make_shared<ExpertBlob>();
  blob->key = key;
  blob->bytes.resize(store_.expert_bytes(key));
  size_t at = 0;
  for (TensorRole role :
       {TensorRole::kExpertGate, TensorRole::kExpertUp, TensorRole::kExpertDown}) {
    const TensorLocation& t = checkpoint.tensor(role, key.layer, key.expert);
    DMOE_RETURN_IF_ERROR(checkpoint.read_tensor(t, blob->bytes.data() + at));
    at += t.n_bytes;
  }
  Sha256 hasher;
  hasher.update(blob->bytes);
  blob->sha256 = hasher.finish();
  // A file gone bad on this disk is not sent: the receiver would refuse it anyway.
  if (const ExpertManifest* digests = checkpoint.expert_digests()) {
    DMOE_RETURN_IF_ERROR(
        digests->check(key, blob->sha256).with_context(checkpoint.expert_location(key)));
  }
  return std::shared_ptr<const ExpertBlob>(std::move(blob));
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
  // Serialise (or read) and hash outside the lock: a few MB, other workers keep going.
  std::shared_ptr<const ExpertBlob> blob;
  if (std::shared_ptr<const ExpertWeights> weights = store_.get(key)) {
    blob = serialize_expert(*weights);
  } else {
    DMOE_ASSIGN_OR_RETURN(blob, read_from_disk(key));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_front(blob);
  while (entries_.size() > max_entries_) entries_.pop_back();
  return blob;
}

}  // namespace dancemoe::node
