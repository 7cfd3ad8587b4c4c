// The response bodies of the OpenAI-compatible API (values in, JSON out):
//
//   completion       {"id": "cmpl-...", "object": "text_completion", "created",
//                     "model", "choices": [{"index", "text", "logprobs",
//                     "finish_reason": "stop" | "length"}], "usage"}
//   chat completion  {"id": "chatcmpl-...", "object": "chat.completion", ...,
//                     "choices": [{"index", "message": {"role": "assistant",
//                     "content"[, "reasoning_content"][, "tool_calls"]},
//                     "logprobs", "finish_reason"}], "usage"}; with tools
//                    an empty content is null, as OpenAI's (openai_tools.h)
//                    (one choice per prompt and n; "logprobs" null unless
//                    asked for: openai_logprobs.h)
//   stream chunks    the same with "object": "text_completion" /
//                    "chat.completion.chunk" and one choice per chunk, "text" /
//                    "delta" ({"role"} first, then {"content"} and/or
//                    {"reasoning_content"} and/or {"tool_calls"}) and the logprobs of the chunk's
//                    tokens; finish_reason null until the choice's last
//                    chunk; usage only in a final chunk with no choices when
//                    stream_options.include_usage.
//   stats chunk      DanceMoE's extension, last, only when asked for with
//                    stream_options.include_stats: no choices, and
//                    "dancemoe": the answer's statistics (generate_json.h's
//                    answer_stats_json: tokens/s, local share of the
//                    activations, remote calls).
//   usage            {"prompt_tokens", "completion_tokens", "total_tokens"}
//   models           {"object": "list", "data": [{"id", "object": "model",
//                     "created", "owned_by": "dancemoe"}]}
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "edge_node/http/openai_request.h"

namespace dancemoe::node {

// What every response of one request repeats.
struct ResponseHeader {
  OpenAiKind kind = OpenAiKind::kCompletion;
  std::string id;  // "cmpl-..." / "chatcmpl-..."
  int64_t created_unix = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// A fresh id with the kind's prefix (random, unique per process run).
std::string new_response_id(OpenAiKind kind);

nlohmann::json usage_json(const Usage& usage);
// One choice of an answer, or (streaming) the part of one in a chunk.
struct Choice {
  int32_t index = 0;
  std::string text;
  std::string finish_reason;  // empty: null
  // The chat answer's thinking, as "reasoning_content" beside "content"
  // (nullopt: the model does not think aloud; no field; in a chunk, an
  // empty one is left out too).
  std::optional<std::string> reasoning;
  nlohmann::json logprobs;  // null unless asked for
  // null, or the message's "tool_calls" (a chunk: the delta's).
  nlohmann::json tool_calls;
  bool null_empty_content = false;  // an empty message content is null (tools)
};

nlohmann::json completion_json(const ResponseHeader& header, const std::vector<Choice>& choices,
                               const Usage& usage);
// A stream chunk of one choice; for chat, `first` adds the assistant role
// to the delta.
nlohmann::json chunk_json(const ResponseHeader& header, const Choice& part, bool first);
nlohmann::json usage_chunk_json(const ResponseHeader& header, const Usage& usage);
nlohmann::json stats_chunk_json(const ResponseHeader& header, const nlohmann::json& stats);
// Every name of the model, the main one first.
nlohmann::json models_json(const std::vector<std::string>& names, int64_t created_unix);

}  // namespace dancemoe::node
