// NodeChatClient: the client side of a node's OpenAI-compatible API for the
// CLI (`dancemoe prompt`, `dancemoe chat`): one streamed chat completion (or
// a plain completion), text handed to a callback as it arrives.
// Not thread-safe; one per command.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace dancemoe::cli {

struct NodeChatOptions {
  std::string node_url = "http://127.0.0.1:8080";  // --node
  std::string api_key;                             // --api-key / $DANCEMOE_API_KEY
  int max_tokens = 256;
  double temperature = 0.7;
  int64_t seed = -1;  // < 0: not sent
  int timeout_s = 600;
};

struct ChatTurn {
  std::string role;
  std::string content;
};

struct StreamedAnswer {
  std::string text;
  std::string finish_reason;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// Streams a chat completion of `history` (raw: a completion of the last
// turn's content). Errors: unavailable (node unreachable), or the node's
// OpenAI error message (invalid_argument / failed_precondition).
Result<StreamedAnswer> stream_answer(const NodeChatOptions& options,
                                     const std::vector<ChatTurn>& history, bool raw,
                                     const std::function<void(std::string_view)>& on_text);

// Adds --node, --api-key, --max-tokens, --temperature, --seed to `command`.
void add_node_chat_flags(CLI::App& command, NodeChatOptions* options);

}  // namespace dancemoe::cli
