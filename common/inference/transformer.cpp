#include "common/inference/transformer.h"

#include <algorithm>

namespace dancemoe {

Transformer::Transformer(const ModelConfig& config, std::unique_ptr<ForwardEngine> engine,
                         MoeExecutor& moe, ComputePrecision precision)
    : config_(config), engine_(std::move(engine)), moe_(moe), precision_(precision) {}

Transformer::~Transformer() = default;

Result<KvCache> Transformer::new_cache(int64_t capacity) const {
  return engine_->new_cache(capacity);
}

Status Transformer::check_tokens(std::span<const int32_t> tokens, const KvCache& cache) const {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t pos0 = cache.n_past();
  if (n == 0) return invalid_argument("forward needs at least one token");
  if (pos0 + n > cache.capacity()) {
    return resource_exhausted("context is full: " + std::to_string(pos0) + " cached + " +
                              std::to_string(n) + " new tokens exceed the capacity of " +
                              std::to_string(cache.capacity()));
  }
  for (int64_t t = 0; t < n; ++t) {
    if (tokens[static_cast<size_t>(t)] < 0 ||
        tokens[static_cast<size_t>(t)] >= config_.vocab_size) {
      return invalid_argument("token id " + std::to_string(tokens[static_cast<size_t>(t)]) +
                              " at position " + std::to_string(t) +
                              " is outside the vocabulary [0, " +
                              std::to_string(config_.vocab_size) + ")");
    }
  }
  return Status::ok();
}

Status Transformer::forward(std::span<const int32_t> tokens, KvCache& cache, LogitsMode mode,
                            std::vector<float>* logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t pos0 = cache.n_past();
  DMOE_RETURN_IF_ERROR(check_tokens(tokens, cache));
  const int64_t vocab = config_.vocab_size;
  if (mode == LogitsMode::kNone) {
    logits->clear();
  } else {
    logits->resize(static_cast<size_t>((mode == LogitsMode::kAll ? n : 1) * vocab));
  }
  const int64_t batch = std::max<int64_t>(1, engine_->max_batch_tokens());
  for (int64_t b0 = 0; b0 < n; b0 += batch) {
    const int64_t m = std::min(batch, n - b0);
    const bool last = b0 + m == n;
    int64_t first_row = 0;
    int64_t n_rows = 0;
    float* out = nullptr;
    if (mode == LogitsMode::kAll) {
      n_rows = m;
      out = logits->data() + b0 * vocab;
    } else if (mode == LogitsMode::kLast && last) {
      first_row = m - 1;
      n_rows = 1;
      out = logits->data();
    }
    Status status = run_batch(tokens.subspan(static_cast<size_t>(b0), static_cast<size_t>(m)),
                              cache, first_row, n_rows, out);
    if (!status.is_ok()) {
      cache.set_n_past(pos0);
      return status;
    }
  }
  return Status::ok();
}

Status Transformer::run_batch(std::span<const int32_t> tokens, KvCache& cache, int64_t first_row,
                              int64_t n_rows, float* logits) {
  DMOE_RETURN_IF_ERROR(engine_->begin(tokens, cache));
  for (int64_t layer = 0; layer < config_.n_layers; ++layer) {
    DMOE_RETURN_IF_ERROR(engine_->attention(layer, cache));
    Status status = config_.layer_is_moe[static_cast<size_t>(layer)]
                        ? engine_->moe(layer, moe_, observer_)
                        : engine_->dense_mlp(layer);
    if (!status.is_ok()) return status.with_context("layer " + std::to_string(layer));
  }
  cache.set_n_past(cache.n_past() + static_cast<int64_t>(tokens.size()));
  return engine_->finish(first_row, n_rows, logits);
}

Status Transformer::forward_batch(std::span<const SequenceStep> steps, std::vector<float>* logits) {
  if (steps.empty()) return invalid_argument("forward_batch needs at least one sequence");
  const int64_t vocab = config_.vocab_size;
  size_t n_logits = 0;
  int64_t n_tokens = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const SequenceStep& step = steps[i];
    if (step.cache == nullptr) return invalid_argument("forward_batch: a sequence has no cache");
    for (size_t j = 0; j < i; ++j) {
      if (steps[j].cache == step.cache) {
        return invalid_argument("forward_batch: two sequences share one KV cache");
      }
    }
    Status status = check_tokens(step.tokens, *step.cache);
    if (!status.is_ok()) return status.with_context("sequence " + std::to_string(i));
    n_logits += step.logits ? 1 : 0;
    n_tokens += static_cast<int64_t>(step.tokens.size());
  }
  logits->resize(n_logits * static_cast<size_t>(vocab));
  saved_past_.clear();
  for (const SequenceStep& step : steps) saved_past_.push_back(step.cache->n_past());
  Status status = Status::ok();
  // A lone sequence too runs as a batch where the engine batches: the same
  // compute as forward(), and its layers reach the layer hook (a new prompt
  // need not wait for a lone stream's whole step either).
  if (!engine_->batches_sequences() || n_tokens > engine_->max_batch_tokens()) {
    // One after another, each as forward() runs it.
    float* out = logits->data();
    for (const SequenceStep& step : steps) {
      status = forward(step.tokens, *step.cache,
                       step.logits ? LogitsMode::kLast : LogitsMode::kNone, &one_logits_);
      if (!status.is_ok()) break;
      if (step.logits) {
        std::copy(one_logits_.begin(), one_logits_.end(), out);
        out += vocab;
      }
    }
  } else {
    status = run_sequences(steps, logits->data());
  }
  if (!status.is_ok()) {
    for (size_t i = 0; i < steps.size(); ++i) steps[i].cache->set_n_past(saved_past_[i]);
  }
  return status;
}

Status Transformer::forward_between_layers(std::span<const SequenceStep> steps,
                                           std::vector<float>* logits) {
  if (!in_layer_hook_) {
    return failed_precondition("forward_between_layers: only from the layer hook");
  }
  // The paused batch's own bookkeeping here, and its engine state there.
  std::vector<int64_t> logit_rows;
  std::vector<int64_t> saved_past;
  logit_rows.swap(logit_rows_);
  saved_past.swap(saved_past_);
  engine_->suspend();
  const Status status = forward_batch(steps, logits);
  engine_->resume();
  logit_rows.swap(logit_rows_);
  saved_past.swap(saved_past_);
  return status;
}

Status Transformer::run_sequences(std::span<const SequenceStep> steps, float* logits) {
  rows_.clear();
  logit_rows_.clear();
  int64_t row = 0;
  for (const SequenceStep& step : steps) {
    rows_.push_back({step.tokens, step.cache});
    row += static_cast<int64_t>(step.tokens.size());
    if (step.logits) logit_rows_.push_back(row - 1);
  }
  DMOE_RETURN_IF_ERROR(engine_->begin_sequences(rows_));
  const bool hook = layer_hook_ && !in_layer_hook_ && engine_->can_suspend();
  for (int64_t layer = 0; layer < config_.n_layers; ++layer) {
    DMOE_RETURN_IF_ERROR(engine_->attention_sequences(layer));
    Status status = config_.layer_is_moe[static_cast<size_t>(layer)]
                        ? engine_->moe(layer, moe_, observer_)
                        : engine_->dense_mlp(layer);
    if (!status.is_ok()) return status.with_context("layer " + std::to_string(layer));
    if (hook && layer + 1 < config_.n_layers) {
      in_layer_hook_ = true;
      layer_hook_();
      in_layer_hook_ = false;
    }
  }
  for (const SequenceStep& step : steps) {
    step.cache->set_n_past(step.cache->n_past() + static_cast<int64_t>(step.tokens.size()));
  }
  return engine_->finish_rows(logit_rows_, logits);
}

}  // namespace dancemoe
