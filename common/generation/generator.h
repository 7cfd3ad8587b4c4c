// Generator: the generation loop of one sequence on a Transformer -- prefill
// the prompt as one batch, then decode token by token, sampling each next
// token, streaming its text, and stopping on an end-of-sequence token, a stop
// string, max_tokens, or when the consumer asks to stop.
//
// Text streaming goes through tokenizer::IncrementalDecoder (never emits a
// broken UTF-8 character) and StopMatcher (never emits text that might
// become a stop string). Each step: the logits row is adjusted (logit_bias,
// penalties: sampler.h), a token sampled; with a grammar (response_format:
// json_schema_grammar.h) the sampled token is kept when the grammar allows
// it and otherwise drawn again from the row masked to the allowed tokens
// (token_constraint.h), and the generation ends as soon as the output is
// complete and nothing may follow. Log-probabilities (logprobs.h) are taken
// from the unadjusted row.
// The per-token work is a SequenceDecoder's (sequence_decoder.h).
// Not thread-safe; one Generator per sequence at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/generation/grammar.h"
#include "common/generation/logprobs.h"
#include "common/generation/sampler.h"
#include "common/generation/token_vocabulary.h"
#include "common/inference/kv_cache.h"
#include "common/inference/transformer.h"
#include "common/tokenizer/tokenizer.h"

namespace dancemoe {

struct GenerationParams {
  int32_t max_tokens = 128;
  std::vector<std::string> stop;  // stop strings; never part of the output
  SamplingParams sampling;
  bool ignore_eos = false;  // benchmarks: generate exactly max_tokens
  // -1: no log-probabilities; n >= 0: each token's and its n most likely alternatives.
  int32_t n_logprobs = -1;
  // The output must be a sentence of this grammar (nullptr: free text).
  std::shared_ptr<const Grammar> grammar;
  // The request field that asked for the grammar, named by its errors.
  std::string grammar_field = "response_format";
  // false: the text keeps special tokens (a chat answer whose tool calls or
  // channels are marked by them: gpt-oss, Mistral; tool_call_parser.h).
  bool skip_special_tokens = true;
  // Checked after every generated token (also when it produced no text yet);
  // returning true stops with FinishReason::kCancelled. May be empty.
  std::function<bool()> cancelled;
};

enum class FinishReason { kStop, kLength, kCancelled };
std::string_view finish_reason_name(FinishReason reason);  // "stop", "length", "cancelled"

struct GenerationResult {
  std::vector<int32_t> tokens;          // generated ids (the stopping EOS excluded)
  std::vector<TokenLogprobs> logprobs;  // one per token when asked for
  std::string text;                     // what was streamed, in full
  FinishReason finish = FinishReason::kLength;
  int64_t prompt_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
};

// What a stream receives: text as it becomes final, and the
// log-probabilities (when asked for) of the tokens generated since the
// previous delta. The last delta of a generation may have no text.
struct TextDelta {
  std::string_view text;
  std::span<const TokenLogprobs> logprobs;
};
// Returning false stops generation (FinishReason::kCancelled), e.g. when an
// HTTP client went away.
using TextSink = std::function<bool(const TextDelta& delta)>;

class Generator {
 public:
  // `eos_ids`: tokens that end the sequence (config.json, generation_config.json
  // and the tokenizer's eos). The transformer and tokenizer must outlive this.
  Generator(Transformer& transformer, const tokenizer::Tokenizer& tokenizer,
            std::vector<int32_t> eos_ids);

  // The tokenizer's vocabulary as constrained decoding walks it; built on
  // the first request with a grammar when not set (owners that serve many
  // requests build it once and set it).
  void set_vocabulary(std::shared_ptr<const TokenVocabulary> vocabulary);

  // Runs `prompt` into a fresh `cache` (cleared first) and generates.
  Result<GenerationResult> generate(std::span<const int32_t> prompt, KvCache& cache,
                                    const GenerationParams& params, const TextSink& sink);

 private:
  Transformer& transformer_;
  const tokenizer::Tokenizer& tokenizer_;
  std::vector<int32_t> eos_ids_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
};

// The end-of-sequence ids of a model: the config's and the tokenizer's eos.
std::vector<int32_t> collect_eos_ids(const ModelConfig& config,
                                     const tokenizer::Tokenizer& tokenizer);

}  // namespace dancemoe
