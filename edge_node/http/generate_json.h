// The JSON of the minimal prompt endpoint (POST /v1/generate), parsed and
// validated here so the HTTP server stays a thin adapter:
//
// request:  {"prompt": "text"  |  "prompt_tokens": [ids],
//            "max_tokens": 64, "temperature": 0, "top_k": 0, "top_p": 1,
//            "seed": 0, "ignore_eos": false, "stop": ["..."],
//            "return_logits": false}
// response: {"text", "tokens": [...], "prompt_tokens": n, "finish_reason",
//            "activations": {"total", "local", "remote", "offloaded"},
//            "remote_calls", "remote_failures", "prefill_ms", "decode_ms",
//            "decode_tokens_per_s", "logits": [[...], ...] (when asked)}
//
// Unknown fields are refused (a typo should not silently change a request).
// Errors are invalid_argument naming the field and what was expected.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/base/status.h"
#include "edge_node/agent/prompt_runner.h"

namespace dancemoe::node {

Result<GenerateRequest> parse_generate_request(std::string_view body);
nlohmann::json generate_response_json(const GenerateResponse& response);

// What one answer cost and where its experts ran, as /v1/generate reports it
// and the chat page shows it (openai_response.h's stats chunk):
//   {"prompt_tokens", "completion_tokens", "prefill_ms", "decode_ms",
//    "decode_tokens_per_s", "activations": {"total", "local", "remote",
//    "offloaded"}, "local_share", "remote_calls", "remote_failures"}
// local_share is local / total activations (null when there were none).
nlohmann::json answer_stats_json(const GenerateResponse& response);

}  // namespace dancemoe::node
