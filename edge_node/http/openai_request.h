// The request bodies of POST /v1/completions and POST /v1/chat/completions
// (OpenAI's API), parsed and validated before anything is queued:
//
//   model        string; the served model's directory name or its model id
//                (absent: the served model)
//   prompt       completions: a string (or a list holding one string)
//   messages     chat: non-empty list of {"role": system|developer|user|
//                assistant, "content": string | [{"type": "text", "text"}]}
//   max_tokens   integer >= 1 (chat also: max_completion_tokens); absent:
//                16 for completions (OpenAI's default), the rest of the
//                context for chat
//   temperature  [0, 2] (1 when absent, as OpenAI; 0 is greedy)
//   top_p        (0, 1];  top_k  integer >= 0 (an extension; 0: off)
//   seed         integer (negative values are taken modulo 2^64)
//   stop         string or list of at most 4 non-empty strings
//   n            only 1;  stream  bool;  stream_options {"include_usage",
//                "include_stats" (an extension: a last chunk with this answer's
//                DanceMoE statistics, openai_response.h)}
//   ignore_eos   bool (an extension, as vLLM's: generate exactly max_tokens)
//   user, presence_penalty / frequency_penalty (0 only), logprobs (false /
//   null only), echo (false only): accepted for client compatibility.
//
// A JSON null is the same as an absent field (clients send nulls). Unknown
// fields are refused (a typo must not silently change sampling). Errors
// name the field (ApiError::param). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/generation/sampler.h"
#include "common/tokenizer/chat_format.h"
#include "edge_node/http/openai_errors.h"

namespace dancemoe::node {

enum class OpenAiKind { kCompletion, kChat };

struct OpenAiRequest {
  OpenAiKind kind = OpenAiKind::kCompletion;
  std::string model;  // empty: the served model
  std::string prompt;
  std::vector<tokenizer::ChatMessage> messages;
  std::optional<int32_t> max_tokens;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool include_stats = false;  // stream_options.include_stats (DanceMoE's extension)
};

std::variant<OpenAiRequest, ApiError> parse_openai_request(std::string_view body, OpenAiKind kind);

}  // namespace dancemoe::node
