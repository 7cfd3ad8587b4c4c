#include "common/generation/generator.h"

#include <algorithm>
#include <chrono>

#include "common/generation/stop_matcher.h"
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
  GenerationResult result;
  result.prompt_tokens = static_cast<int64_t>(prompt.size());
  cache.clear();
  Sampler sampler(params.sampling);
  tokenizer::IncrementalDecoder decoder(tokenizer_);
  StopMatcher stops(params.stop);
  std::vector<float> logits;

  auto emit = [&](const std::string& text) {
    if (text.empty()) return true;
    result.text += text;
    return !sink || sink(text);
  };

  const auto prefill_start = std::chrono::steady_clock::now();
  DMOE_RETURN_IF_ERROR(transformer_.forward(prompt, cache, LogitsMode::kLast, &logits));
  result.prefill_seconds = seconds_since(prefill_start);

  const auto decode_start = std::chrono::steady_clock::now();
  result.finish = FinishReason::kLength;
  for (int32_t step = 0; step < params.max_tokens; ++step) {
    const int32_t next = sampler.sample(logits);
    if (!params.ignore_eos && is_eos(next)) {
      result.finish = FinishReason::kStop;
      break;
    }
    result.tokens.push_back(next);
    if (!emit(stops.push(decoder.push(next)))) {
      result.finish = FinishReason::kCancelled;
      break;
    }
    if (stops.stopped()) {
      result.finish = FinishReason::kStop;
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
  if (result.finish != FinishReason::kCancelled && !stops.stopped()) {
    std::string tail = stops.push(decoder.flush());
    if (!stops.stopped()) tail += stops.flush();
    if (stops.stopped()) result.finish = FinishReason::kStop;
    emit(tail);
  }
  result.decode_seconds = seconds_since(decode_start);
  return result;
}

}  // namespace dancemoe
