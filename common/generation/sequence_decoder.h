// SequenceDecoder: one sequence's generation between forwards -- given the
// logits of its last forward, picks the next token (logit_bias, penalties,
// grammar: sampler.h, token_constraint.h), records its log-probabilities,
// streams the text that became final (IncrementalDecoder, StopMatcher) and
// decides whether the generation goes on. The Generator drives one with a
// forward per token; the node's batch scheduler drives many, one batched
// forward per step for all of them. The numbers it produces depend only on
// the logits it is given, so a sequence decoded in a batch generates what it
// generates alone.
//
// Usage: create(); forward the prompt; while (!finished()) { step(logits);
// if (!finished()) forward(next_token()); } finish().
// Not thread-safe; one per sequence.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/base/status.h"
#include "common/generation/generator.h"
#include "common/generation/stop_matcher.h"
#include "common/generation/token_constraint.h"
#include "common/tokenizer/incremental_decoder.h"

namespace dancemoe {

class SequenceDecoder {
 public:
  // `tokenizer` may be null: tokens only, no text (then no grammar and no
  // stop strings). `vocabulary` is needed with a grammar (built when null).
  // With `keep_logits` every step's logits row is kept (also the EOS's).
  static Result<std::unique_ptr<SequenceDecoder>> create(
      const GenerationParams& params, std::span<const int32_t> prompt,
      const tokenizer::Tokenizer* tokenizer, std::vector<int32_t> eos_ids,
      std::shared_ptr<const TokenVocabulary> vocabulary, int64_t vocab_size,
      bool keep_logits = false);

  // Picks the next token from the logits of the last forward (the row is
  // adjusted in place when sampling needs it) and streams its text to `sink`
  // (may be empty). Errors only when a grammar cannot continue.
  Status step(std::span<float> logits, const TextSink& sink);
  bool finished() const { return finished_; }
  // The token the next forward runs (valid when !finished() after step()).
  int32_t next_token() const { return next_; }
  // Streams the text still held back (unless cancelled); call once, at the end.
  void finish(const TextSink& sink);

  GenerationResult& result() { return result_; }
  // Every step's unadjusted logits row, with keep_logits.
  std::vector<std::vector<float>>& logits() { return logits_; }

 private:
  SequenceDecoder(const GenerationParams& params, const tokenizer::Tokenizer* tokenizer,
                  std::vector<int32_t> eos_ids, bool keep_logits);
  bool is_eos(int32_t id) const;
  bool emit(const std::string& text, bool last, const TextSink& sink);

  const GenerationParams params_;
  const tokenizer::Tokenizer* tokenizer_;
  std::vector<int32_t> eos_ids_;
  bool keep_logits_;
  Sampler sampler_;
  std::unique_ptr<TokenConstraint> constraint_;
  std::unique_ptr<tokenizer::IncrementalDecoder> decoder_;
  StopMatcher stops_;
  GenerationResult result_;
  std::vector<std::vector<float>> logits_;
  std::vector<float> row_;  // the adjusted (and masked) copy the sampler picks from
  size_t n_logprobs_sent_ = 0;
  int32_t steps_ = 0;
  int32_t next_ = -1;
  bool finished_ = false;
};

}  // namespace dancemoe
