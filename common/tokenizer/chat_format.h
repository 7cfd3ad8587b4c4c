// Chat formatting: turns a conversation into the prompt text that a chat
// model was trained on, for the model families DanceMoE serves. The result is
// plain text that already contains the special tokens (<|im_start|>, <s>,
// ...) as text: encode it with add_special_tokens = false, as HF's
// apply_chat_template(tokenize=True) does, so that no second <s> is added.
//
// kChatML (Qwen2/Qwen2.5/Qwen3 MoE, the synthetic demo tokenizer):
//   for each message  "<|im_start|>" role "\n" content "<|im_end|>\n"
//   generation prompt "<|im_start|>assistant\n"
//   Roles: system, user, assistant. Byte-identical to Qwen3's
//   tokenizer_config.json template for such conversations, except that the
//   Qwen3 template also (a) removes "<think>...</think>" reasoning from
//   assistant turns before the last user turn and (b) adds
//   "<think>\n\n</think>\n\n" after the generation prompt when
//   enable_thinking=false; neither is done here (content goes in verbatim,
//   thinking stays on), and tools/tool calls are not supported.
//
// kMistralInst (Mixtral-8x7B-Instruct-v0.1's current template):
//   "<s>" then per user turn " [INST] " content " [/INST]" and per assistant
//   turn " " content "</s>"; an optional leading system message is
//   prepended to the first user turn as system "\n\n" user. Roles must
//   alternate user/assistant after the optional system message (else an
//   error, as the template raises). add_generation_prompt changes nothing:
//   the text after a user turn already ends with " [/INST]". Note the
//   template's spaces: "<s> [INST] hi [/INST] hello</s> [INST] ...".
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace dancemoe::tokenizer {

enum class ChatFormat { kChatML, kMistralInst };

struct ChatMessage {
  std::string role;
  std::string content;
};

// "chatml" / "mistral_inst".
std::string_view chat_format_name(ChatFormat format);

// Errors (invalid_argument) on an unsupported role or, for kMistralInst, a
// conversation that does not alternate user/assistant.
Result<std::string> format_chat(ChatFormat format, std::span<const ChatMessage> messages,
                                bool add_generation_prompt);

// The format a model uses, from its tokenizer_config.json chat_template
// (may be empty) and whether the vocabulary has "<|im_start|>" / "[INST]"
// tokens; nullopt when nothing indicates a supported format (base models).
std::optional<ChatFormat> detect_chat_format(std::string_view chat_template,
                                             bool has_im_start_token, bool has_inst_token);

}  // namespace dancemoe::tokenizer
