// The request bodies of POST /v1/completions and POST /v1/chat/completions
// (OpenAI's API), parsed and validated before anything is queued:
//
//   model        string; the served model's directory name or its model id
//                (absent: the served model)
//   prompt       completions: a string, a list of strings, a list of token
//                ids, or a list of lists of token ids (one choice set each)
//   messages     chat: non-empty list of {"role": system|developer|user|
//                assistant|tool, "content": string | [{"type": "text",
//                "text"}], "name"?}; an assistant message may carry
//                "tool_calls" [{"id", "type": "function", "function":
//                {"name", "arguments"}}] (then "content" may be null) and
//                "reasoning_content"; a tool message needs "tool_call_id".
//                Kept as sent (developer becomes system) for the model's
//                chat template.
//   tools, tool_choice, parallel_tool_calls
//                chat: openai_tools.h (completions: ignored)
//   chat_template_kwargs
//                chat: an object of extra chat template variables, as vLLM
//                and llama-server take it (e.g. {"enable_thinking": false})
//   reasoning_effort
//                chat: "minimal" | "low" | "medium" | "high", handed to the
//                chat template as its variable of that name (gpt-oss's
//                harmony system message); chat_template_kwargs' wins
//   max_tokens / max_completion_tokens
//                integer >= 1 (max_completion_tokens wins when both are
//                given); absent: 16 for completions (OpenAI's default), the
//                rest of the context for chat
//   temperature  [0, 2] (1 when absent, as OpenAI; 0 is greedy)
//   top_p        (0, 1];  top_k  integer >= 0 (0: off);  min_p  [0, 1]
//   seed         integer >= 0. Absent: a fresh random seed for every request
//                (so "regenerate" gives another answer); with n > 1 choice i
//                uses seed + i, so a seed reproduces every choice.
//   n            1..16 choices per prompt (at most 16 choices in all)
//   presence_penalty, frequency_penalty  [-2, 2];
//   repetition_penalty (vLLM; llama-server's repeat_penalty)  (0, 10]
//   logit_bias   {"token id": bias in [-100, 100]}, at most 1024 entries
//   logprobs     completions: integer 0..20 (the chosen token's logprob and
//                that many alternatives); chat: bool, with top_logprobs
//                0..20. Raw model log-probabilities (common/generation/
//                logprobs.h).
//   echo         completions: true puts the prompt before the text (not
//                with logprobs)
//   best_of      completions: >= n; more than n is accepted and n are made
//   response_format / guided_json (vLLM) / json_schema (llama-server):
//                constrained JSON output (response_format.h)
//   stop         string or list of at most 4 non-empty strings
//   stream       bool;  stream_options {"include_usage", "include_stats"
//                (an extension: a last chunk with this answer's DanceMoE
//                statistics, openai_response.h)}
//   ignore_eos   bool (an extension, as vLLM's: generate exactly max_tokens)
//   user         string
//
// Fields of OpenAI, vLLM and llama-server that the node does not implement
// are accepted and listed in `ignored` (openai_fields.h). A JSON null is the same as an absent
// field (clients send nulls). Other unknown fields are refused (a typo must not silently change
// sampling). Errors name the field (ApiError::param). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/generation/grammar.h"
#include "common/generation/sampler.h"
#include "edge_node/http/openai_errors.h"
#include "edge_node/http/openai_tools.h"

namespace dancemoe::node {

enum class OpenAiKind { kCompletion, kChat };

// One prompt of a completions request: text, or token ids as given.
struct PromptInput {
  std::string text;
  std::optional<std::vector<int32_t>> tokens;
};

inline constexpr int32_t kMaxChoices = 16;
inline constexpr int32_t kMaxTopLogprobs = 20;

struct OpenAiRequest {
  OpenAiKind kind = OpenAiKind::kCompletion;
  std::string model;                 // empty: the served model
  std::vector<PromptInput> prompts;  // completions: at least one
  // chat: the messages as sent, in the client's key order (checked; the
  // role "developer" written as "system").
  nlohmann::ordered_json messages;
  ToolsRequest tools;                                                              // chat
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();  // chat
  std::optional<int32_t> max_tokens;
  SamplingParams sampling;
  bool seed_given = false;  // false: sampling.seed is a fresh random seed
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool include_stats = false;  // stream_options.include_stats (DanceMoE's extension)
  int32_t n = 1;
  int32_t n_logprobs = -1;  // -1: none; else alternatives per token
  bool echo = false;
  std::shared_ptr<const Grammar> grammar;         // response_format; nullptr: free text
  std::string grammar_field = "response_format";  // or tool_choice (a forced call)
  std::vector<std::string> ignored;               // accepted fields this node does not act on
};

std::variant<OpenAiRequest, ApiError> parse_openai_request(std::string_view body, OpenAiKind kind);

}  // namespace dancemoe::node
