#include "common/generation/generator.h"

#include <algorithm>
#include <chrono>

#include "common/generation/sequence_decoder.h"

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
  if (params.grammar && !vocabulary_) {
    vocabulary_ = TokenVocabulary::build(tokenizer_, transformer_.config().vocab_size);
  }
  DMOE_ASSIGN_OR_RETURN(std::unique_ptr<SequenceDecoder> decoder,
                        SequenceDecoder::create(params, prompt, &tokenizer_, eos_ids_, vocabulary_,
                                                transformer_.config().vocab_size));
  cache.clear();
  std::vector<float> logits;
  const auto prefill_start = std::chrono::steady_clock::now();
  DMOE_RETURN_IF_ERROR(transformer_.forward(prompt, cache, LogitsMode::kLast, &logits));
  const double prefill_seconds = seconds_since(prefill_start);
  const auto decode_start = std::chrono::steady_clock::now();
  while (!decoder->finished()) {
    DMOE_RETURN_IF_ERROR(decoder->step(logits, sink));
    if (decoder->finished()) break;
    const int32_t next = decoder->next_token();
    DMOE_RETURN_IF_ERROR(
        transformer_.forward(std::span(&next, 1), cache, LogitsMode::kLast, &logits));
  }
  decoder->finish(sink);
  GenerationResult result = std::move(decoder->result());
  result.prefill_seconds = prefill_seconds;
  result.decode_seconds = seconds_since(decode_start);
  return result;
}

}  // namespace dancemoe
