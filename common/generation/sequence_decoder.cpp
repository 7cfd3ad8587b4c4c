#include "common/generation/sequence_decoder.h"

#include <algorithm>

#include "common/base/json_field.h"

namespace dancemoe {

SequenceDecoder::SequenceDecoder(const GenerationParams& params,
                                 const tokenizer::Tokenizer* tokenizer,
                                 std::vector<int32_t> eos_ids, bool keep_logits)
    : params_(params),
      tokenizer_(tokenizer),
      eos_ids_(std::move(eos_ids)),
      keep_logits_(keep_logits),
      sampler_(params.sampling),
      stops_(tokenizer != nullptr ? params.stop : std::vector<std::string>{}) {}

Result<std::unique_ptr<SequenceDecoder>> SequenceDecoder::create(
    const GenerationParams& params, std::span<const int32_t> prompt,
    const tokenizer::Tokenizer* tokenizer, std::vector<int32_t> eos_ids,
    std::shared_ptr<const TokenVocabulary> vocabulary, int64_t vocab_size, bool keep_logits) {
  DMOE_RETURN_IF_ERROR(params.sampling.validate());
  if (prompt.empty()) return invalid_argument("the prompt is empty (no tokens)");
  if (params.max_tokens < 0) return invalid_argument("max_tokens must be >= 0");
  std::unique_ptr<SequenceDecoder> d(
      new SequenceDecoder(params, tokenizer, std::move(eos_ids), keep_logits));
  if (params.grammar) {
    if (tokenizer == nullptr) {
      return invalid_argument(params.grammar_field + " needs the model's tokenizer");
    }
    if (!vocabulary) vocabulary = TokenVocabulary::build(*tokenizer, vocab_size);
    Result<std::unique_ptr<TokenConstraint>> made =
        TokenConstraint::create(params.grammar, vocabulary, d->eos_ids_);
    if (!made.is_ok()) return made.status().with_context(params.grammar_field);
    d->constraint_ = std::move(*made);
  }
  if (tokenizer != nullptr) {
    d->decoder_ =
        std::make_unique<tokenizer::IncrementalDecoder>(*tokenizer, params.skip_special_tokens);
  }
  d->sampler_.set_prompt(prompt);
  d->result_.prompt_tokens = static_cast<int64_t>(prompt.size());
  d->result_.finish = FinishReason::kLength;
  d->finished_ = params.max_tokens == 0;
  return d;
}

bool SequenceDecoder::is_eos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

bool SequenceDecoder::emit(const std::string& text, bool last, const TextSink& sink) {
  const std::span<const TokenLogprobs> fresh =
      std::span<const TokenLogprobs>(result_.logprobs).subspan(n_logprobs_sent_);
  if (text.empty() && !(last && !fresh.empty())) return true;
  result_.text += text;
  n_logprobs_sent_ = result_.logprobs.size();
  return !sink || sink(TextDelta{text, fresh});
}

Status SequenceDecoder::step(std::span<float> logits, const TextSink& sink) {
  if (finished_) return failed_precondition("SequenceDecoder::step after the end");
  if (keep_logits_) logits_.emplace_back(logits.begin(), logits.end());
  const bool adjusted = params_.sampling.adjusts() || constraint_;
  if (adjusted) {
    row_.assign(logits.begin(), logits.end());
    sampler_.adjust(row_);
  }
  const std::span<float> pick = adjusted ? std::span<float>(row_) : logits;
  int32_t next = sampler_.sample(pick);
  if (constraint_ && !constraint_->allows(next)) {
    if (!constraint_->mask(pick)) {
      return invalid_argument(
          params_.grammar_field + ": no token of the vocabulary can continue the output " +
          json_quote(result_.text) + " (or the schema is too ambiguous to follow)");
    }
    next = sampler_.sample(pick);
  }
  ++steps_;
  if (params_.n_logprobs >= 0) {
    result_.logprobs.push_back(token_logprobs(logits, next, params_.n_logprobs));
  }
  if (!params_.ignore_eos && is_eos(next)) {
    if (!result_.logprobs.empty()) result_.logprobs.pop_back();  // the EOS is not output
    result_.finish = FinishReason::kStop;
    finished_ = true;
    return Status::ok();
  }
  sampler_.accept(next);
  if (constraint_) constraint_->accept(next);
  result_.tokens.push_back(next);
  next_ = next;
  if (decoder_ && !emit(stops_.push(decoder_->push(next)), false, sink)) {
    result_.finish = FinishReason::kCancelled;
    finished_ = true;
    return Status::ok();
  }
  if (stops_.stopped() || (constraint_ && constraint_->finished())) {
    result_.finish = FinishReason::kStop;  // a stop string, or a whole value and nothing may follow
    finished_ = true;
    return Status::ok();
  }
  if (params_.cancelled && params_.cancelled()) {
    result_.finish = FinishReason::kCancelled;
    finished_ = true;
    return Status::ok();
  }
  if (steps_ == params_.max_tokens) finished_ = true;  // no forward for a token nobody reads
  return Status::ok();
}

void SequenceDecoder::finish(const TextSink& sink) {
  finished_ = true;
  if (result_.finish == FinishReason::kCancelled || !decoder_) return;
  std::string tail;
  if (!stops_.stopped()) {
    tail = stops_.push(decoder_->flush());
    if (!stops_.stopped()) tail += stops_.flush();
    if (stops_.stopped()) result_.finish = FinishReason::kStop;
  }
  emit(tail, true, sink);
}

}  // namespace dancemoe
