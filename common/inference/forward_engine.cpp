#include "common/inference/forward_engine.h"

namespace dancemoe {
namespace {

Status no_batches(const ForwardEngine& engine) {
  return failed_precondition(engine.describe() +
                             " runs one sequence per batch (batches_sequences() is false)");
}

}  // namespace

Status ForwardEngine::begin_sequences(std::span<const SequenceRows>) { return no_batches(*this); }

Status ForwardEngine::attention_sequences(int64_t) { return no_batches(*this); }

Status ForwardEngine::finish_rows(std::span<const int64_t>, float*) { return no_batches(*this); }

}  // namespace dancemoe
