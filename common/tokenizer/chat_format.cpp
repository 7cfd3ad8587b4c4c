#include "common/tokenizer/chat_format.h"

namespace dancemoe::tokenizer {
namespace {

constexpr std::string_view kImStart = "<|im_start|>";
constexpr std::string_view kImEnd = "<|im_end|>";
constexpr std::string_view kMistralBos = "<s>";
constexpr std::string_view kMistralEos = "</s>";

std::string describe_role(size_t index, const ChatMessage& message) {
  return "message " + std::to_string(index) + " has role \"" + message.role + "\"";
}

Result<std::string> format_chatml(std::span<const ChatMessage> messages,
                                  bool add_generation_prompt) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& message = messages[i];
    if (message.role != "system" && message.role != "user" && message.role != "assistant") {
      return invalid_argument("chatml: " + describe_role(i, message) +
                              "; supported roles: system, user, assistant");
    }
    out += kImStart;
    out += message.role;
    out += '\n';
    out += message.content;
    out += kImEnd;
    out += '\n';
  }
  if (add_generation_prompt) {
    out += kImStart;
    out += "assistant\n";
  }
  return out;
}

Result<std::string> format_mistral_inst(std::span<const ChatMessage> messages) {
  std::optional<std::string_view> system;
  std::span<const ChatMessage> turns = messages;
  if (!turns.empty() && turns.front().role == "system") {
    system = turns.front().content;
    turns = turns.subspan(1);
  }
  std::string out(kMistralBos);
  for (size_t i = 0; i < turns.size(); ++i) {
    const ChatMessage& message = turns[i];
    const size_t index = i + (system ? 1 : 0);
    const char* expected = i % 2 == 0 ? "user" : "assistant";
    if (message.role != "user" && message.role != "assistant") {
      return invalid_argument("mistral_inst: " + describe_role(index, message) +
                              "; supported: an optional first system message, then user and "
                              "assistant");
    }
    if (message.role != expected) {
      return invalid_argument("mistral_inst: " + describe_role(index, message) + ", expected \"" +
                              expected +
                              "\": after the optional system message, roles must alternate "
                              "user/assistant/user/assistant/...");
    }
    if (message.role == "user") {
      out += " [INST] ";
      if (i == 0 && system) {
        out += *system;
        out += "\n\n";
      }
      out += message.content;
      out += " [/INST]";
    } else {
      out += ' ';
      out += message.content;
      out += kMistralEos;
    }
  }
  return out;
}

}  // namespace

std::string_view chat_format_name(ChatFormat format) {
  switch (format) {
    case ChatFormat::kChatML:
      return "chatml";
    case ChatFormat::kMistralInst:
      return "mistral_inst";
  }
  return "unknown";
}

Result<std::string> format_chat(ChatFormat format, std::span<const ChatMessage> messages,
                                bool add_generation_prompt) {
  switch (format) {
    case ChatFormat::kChatML:
      return format_chatml(messages, add_generation_prompt);
    case ChatFormat::kMistralInst:
      return format_mistral_inst(messages);
  }
  return invalid_argument("unknown chat format");
}

std::optional<ChatFormat> detect_chat_format(std::string_view chat_template,
                                             bool has_im_start_token, bool has_inst_token) {
  if (chat_template.find(kImStart) != std::string_view::npos) return ChatFormat::kChatML;
  if (chat_template.find("[INST]") != std::string_view::npos) return ChatFormat::kMistralInst;
  if (!chat_template.empty()) return std::nullopt;  // a template of some other family
  if (has_im_start_token) return ChatFormat::kChatML;
  if (has_inst_token) return ChatFormat::kMistralInst;
  return std::nullopt;
}

}  // namespace dancemoe::tokenizer
