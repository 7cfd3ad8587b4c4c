#include "common/generation/generator.h"

#include <algorithm>
#include <chrono>

#include "common/base/json_field.h"
#include "common/generation/stop_matcher.h"
#include "common/generation/token_constraint.h"
#include "common/tokenizer/incremental_decoder.h"

namespace dancemoe {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

std::vector<int32_t> collect_eos_ids(const ModelConfig& config,
                                     const tokenizer::Tokenizer& tokenizer) {
  std::vector<int32_t> ids = config.eos_token_ids;
  if (auto eos = tokenizer.eos_id()) ids.push_back(*eos);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

Generator::Generator(Transformer& transformer, const tokenizer::Tokenizer& tokenizer,
                     std::vector<int32_t> eos_ids)
    : transformer_(transformer), tokenizer_(tokenizer), eos_ids_(std::move(eos_ids)) {}

bool Generator::is_eos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

void Generator::set_vocabulary(std::shared_ptr<const TokenVocabulary> vocabulary) {
  vocabulary_ = std::move(vocabulary);
}

Result<GenerationResult> Generator::generate(std::span<const int32_t> prompt, KvCache& cache,
                                             const GenerationParams& params, const TextSink& sink) {
  DMOE_RETURN_IF_ERROR(params.sampling.validate());
  if (prompt.empty()) return invalid_argument("the prompt is empty (no tokens)");
  if (params.max_tokens < 0) return invalid_argument("max_tokens must be >= 0");
  const int64_t needed = static_cast<int64_t>(prompt.size()) + params.max_tokens;
  if (needed > cache.capacity()) {
    return invalid_argument("prompt (" + std::to_string(prompt.size()) + " tokens) + max_tokens (" +
                            std::to_string(params.max_tokens) + ") exceed the context of " +
                            std::to_string(cache.capacity()) + " tokens");
  }
  std::unique_ptr<TokenConstraint> constraint;
  if (params.grammar) {
    if (!vocabulary_) {
      vocabulary_ = TokenVocabulary::build(tokenizer_, transformer_.config().vocab_size);
    }
    Result<std::unique_ptr<TokenConstraint>> made =
        TokenConstraint::create(params.grammar, vocabulary_, eos_ids_);
    if (!made.is_ok()) return made.status().with_context("response_format");
    constraint = std::move(*made);
  }
  GenerationResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  cache.clear();
  Sampler sampler(params.sampling);
  sampler.set_prompt(prompt);
  tokenizer::IncrementalDecoder decoder(tokenizer_, params.skip_special_tokens);
  StopMatcher stops(params.stop);
  std::vector<float> logits;
  std::vector<float> row;  // the adjusted (and masked) copy the sampler picks from
  size_t n_logprobs_sent = 0;

  auto emit = [&](const std::string& text, bool last) {
    const std::span<const TokenLogprobs> fresh =
        std::span<const TokenLogprobs>(result.logprobs).subspan(n_logprobs_sent);
    if (text.empty() && !(last && !fresh.empty())) return true;
    result.text += text;
    n_logprobs_sent = result.logprobs.size();
    return !sink || sink(TextDelta{text, fresh});
  };

  const auto prefill_start = std::chrono::steady_clock::now();
  DMOE_RETURN_IF_ERROR(transformer_.forward(prompt, cache, LogitsMode::kLast, &logits));
  result.prefill_seconds = seconds_since(prefill_start);

  const auto decode_start = std::chrono::steady_clock::now();
  result.finish = FinishReason::kLength;
  for (int32_t step = 0; step < params.max_tokens; ++step) {
    const bool adjusted = params.sampling.adjusts() || constraint;
    if (adjusted) {
      row = logits;
      sampler.adjust(row);
    }
    const std::span<float> pick = adjusted ? std::span<float>(row) : std::span<float>(logits);
    int32_t next = sampler.sample(pick);
    if (constraint && !constraint->allows(next)) {
      if (!constraint->mask(pick)) {
        return invalid_argument(
            "response_format: no token of the vocabulary can continue the output " +
            json_quote(result.text) + " (or the schema is too ambiguous to follow)");
      }
      next = sampler.sample(pick);
    }
    if (params.n_logprobs >= 0) {
      result.logprobs.push_back(token_logprobs(logits, next, params.n_logprobs));
    }
    if (!params.ignore_eos && is_eos(next)) {
      if (!result.logprobs.empty()) result.logprobs.pop_back();  // the EOS is not output
      result.finish = FinishReason::kStop;
      break;
    }
    sampler.accept(next);
    if (constraint) constraint->accept(next);
    result.tokens.push_back(next);
    if (!emit(stops.push(decoder.push(next)), false)) {
      result.finish = FinishReason::kCancelled;
      break;
    }
    if (stops.stopped() || (constraint && constraint->finished())) {
      result.finish =
          FinishReason::kStop;  // a stop string, or a whole value and nothing may follow
      break;
    }
    if (params.cancelled && params.cancelled()) {
      result.finish = FinishReason::kCancelled;
      break;
    }
    if (step + 1 == params.max_tokens) break;  // no forward for a token nobody reads
    DMOE_RETURN_IF_ERROR(
        transformer_.forward(std::span(&next, 1), cache, LogitsMode::kLast, &logits));
  }
  if (result.finish != FinishReason::kCancelled) {
    std::string tail;
    if (!stops.stopped()) {
      tail = stops.push(decoder.flush());
      if (!stops.stopped()) tail += stops.flush();
      if (stops.stopped()) result.finish = FinishReason::kStop;
    }
    emit(tail, true);
  }
  result.decode_seconds = seconds_since(decode_start);
  return result;
}

}  // namespace dancemoe
