// ChatTemplate: how a model's conversations become the prompt text it was
// trained on. A model's own template -- tokenizer_config.json's
// `chat_template` (a string, or HF's list of named templates) or a GGUF's
// `tokenizer.chat_template` -- is rendered as HF transformers renders it
// (Jinja, common/jinja/template.h); a model without one falls back to the
// built-in format its vocabulary indicates (chat_format.h: ChatML,
// Mistral [INST]); a model with neither has no chat (for_tokenizer -> null).
// docs/chat_templates.md has the details and the supported families.
//
// What a template sees (as HF passes it): `messages`, `tools` (None when the
// request has none), `add_generation_prompt`, `bos_token` / `eos_token` (when
// the tokenizer names them) and any extra kwargs (`enable_thinking` for
// Qwen3 and GLM-4.5, `thinking` for DeepSeek-V3.1, `reasoning_effort` for
// gpt-oss, ...). Messages are OpenAI chat messages, normalized first as vLLM
// does, so that every template gets what it can use:
//   - content: a string; a list of text parts is joined; null or absent is ""
//     (other part types are refused);
//   - reasoning: `reasoning_content`, `reasoning` or `thinking` on an
//     assistant message is passed as both `reasoning_content` (Qwen3, GLM)
//     and `thinking` (gpt-oss);
//   - tool_calls[].function.arguments: a JSON object for templates that
//     read it as a mapping (most), the JSON text for templates that
//     concatenate it as a string (DeepSeek) -- which one is found once, when
//     the template is loaded, by rendering a probe conversation both ways;
//     `"tool_calls": null` or `[]` is dropped (templates test for the key);
//   - everything else (name, tool_call_id, ...) as sent.
// With named templates, a request with tools uses "tool_use" when there is
// one, as HF does; otherwise "default".
//
// The prompt holds the special tokens as text: encode it with
// add_special_tokens = false. Immutable; render() is thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/jinja/render_state.h"
#include "common/tokenizer/chat_format.h"
#include "common/tokenizer/tool_call_parser.h"

namespace dancemoe::jinja {
class Template;
}

namespace dancemoe::tokenizer {

class Tokenizer;

struct ChatRequest {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // OpenAI chat messages
  nlohmann::ordered_json tools;  // null, or OpenAI tool definitions [{"type": "function", ...}]
  bool add_generation_prompt = true;
  // More template variables (an object): enable_thinking, reasoning_effort, ...
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
};

struct ChatTemplateConfig {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  jinja::RenderLimits limits;
  // What strftime_now() reads (gpt-oss writes the date); default: the clock.
  std::function<std::chrono::system_clock::time_point()> clock;
};

struct NamedChatTemplate {
  std::string name;  // "default", "tool_use", ...
  std::string source;
};

class ChatTemplate {
 public:
  // Jinja templates (one, or HF's named list, which must include "default").
  // Fails naming the template, line and column when one does not parse.
  static Result<std::unique_ptr<ChatTemplate>> from_jinja(std::vector<NamedChatTemplate> templates,
                                                          ChatTemplateConfig config = {});
  static std::unique_ptr<ChatTemplate> from_builtin(ChatFormat format);
  // The model's own template(s) with its bos/eos tokens; else its built-in
  // format; nullptr when it has neither. Fails when its template does not
  // parse (callers may then fall back to Tokenizer::chat_format()).
  static Result<std::unique_ptr<ChatTemplate>> for_tokenizer(const Tokenizer& tokenizer,
                                                             ChatTemplateConfig config = {});

  // for_tokenizer(), but a template that does not parse falls back to the
  // built-in format (or none) with `*warning` saying why; what the node and
  // the CLI use.
  static std::unique_ptr<ChatTemplate> for_tokenizer_or_builtin(const Tokenizer& tokenizer,
                                                                std::string* warning,
                                                                ChatTemplateConfig config = {});

  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&) = delete;
  ChatTemplate& operator=(const ChatTemplate&) = delete;

  // invalid_argument, naming the message and field, for a malformed
  // conversation; with the template's own message when it refuses one
  // (raise_exception, e.g. roles that do not alternate).
  Result<std::string> render(const ChatRequest& request) const;
  // role/content messages (the built-in formats' input).
  Result<std::string> render(std::span<const ChatMessage> messages,
                             bool add_generation_prompt) const;

  // A short name for /v1/stats and logs: "chatml", "mistral_inst", "harmony",
  // "deepseek_v3", "deepseek_v2", "glm4", "tulu" or "jinja".
  std::string_view format_name() const { return format_name_; }
  // How the model writes tool calls (kNone for built-in formats).
  ToolCallFormat tool_call_format() const { return tool_call_format_; }
  // The template renders `tools` into the prompt (the probe tool appears).
  bool supports_tools() const { return supports_tools_; }
  bool is_builtin() const { return builtin_.has_value(); }

 private:
  struct Entry;
  ChatTemplate();
  Result<std::string> render_builtin(const ChatRequest& request) const;
  const Entry& entry_for(const ChatRequest& request) const;

  std::optional<ChatFormat> builtin_;
  std::vector<Entry> entries_;
  ChatTemplateConfig config_;
  std::string format_name_;
  ToolCallFormat tool_call_format_ = ToolCallFormat::kNone;
  bool supports_tools_ = false;
};

}  // namespace dancemoe::tokenizer
