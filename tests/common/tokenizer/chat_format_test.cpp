// Chat formatting: the exact prompt strings of ChatML (Qwen) and Mistral
// [INST] (Mixtral-8x7B-Instruct-v0.1), role validation, format detection.
#include "common/tokenizer/chat_format.h"

#include <doctest/doctest.h>

#include <vector>

#include "tests/common/tokenizer/tokenizer_fixtures.h"

namespace dancemoe::tokenizer {
namespace {

std::string format_or_fail(ChatFormat format, const std::vector<ChatMessage>& messages,
                           bool add_generation_prompt) {
  Result<std::string> text = format_chat(format, messages, add_generation_prompt);
  REQUIRE_MESSAGE(text.is_ok(), text.status().to_string());
  return *text;
}

}  // namespace

TEST_CASE("chat format: ChatML renders Qwen's <|im_start|>role\\ncontent<|im_end|>\\n turns") {
  const std::vector<ChatMessage> messages{
      {"system", "You are helpful."}, {"user", "Hi!"}, {"assistant", "Hello."}, {"user", "2+2?"}};
  CHECK(format_or_fail(ChatFormat::kChatML, messages, true) ==
        "<|im_start|>system\nYou are helpful.<|im_end|>\n"
        "<|im_start|>user\nHi!<|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n"
        "<|im_start|>user\n2+2?<|im_end|>\n"
        "<|im_start|>assistant\n");
  CHECK(format_or_fail(ChatFormat::kChatML, {{"user", "x"}}, false) ==
        "<|im_start|>user\nx<|im_end|>\n");
  CHECK(format_or_fail(ChatFormat::kChatML, {}, true) == "<|im_start|>assistant\n");
}

TEST_CASE("chat format: ChatML rejects roles it does not know") {
  Result<std::string> text = format_chat(ChatFormat::kChatML, {{{"tool", "42"}}}, true);
  REQUIRE_FALSE(text.is_ok());
  CHECK(text.status().message().find("message 0 has role \"tool\"") != std::string::npos);
}

TEST_CASE("chat format: Mistral [INST] matches the Mixtral-8x7B-Instruct template") {
  CHECK(format_or_fail(ChatFormat::kMistralInst, {{"user", "Hi"}}, true) ==
        "<s> [INST] Hi [/INST]");
  CHECK(format_or_fail(ChatFormat::kMistralInst,
                       {{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}},
                       true) == "<s> [INST] Hi [/INST] Hello!</s> [INST] Bye [/INST]");
  // The system prompt goes before the first user turn only.
  CHECK(
      format_or_fail(ChatFormat::kMistralInst,
                     {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Yo"}, {"user", "Q"}},
                     true) == "<s> [INST] Be brief.\n\nHi [/INST] Yo</s> [INST] Q [/INST]");
  // add_generation_prompt changes nothing for this template.
  CHECK(format_or_fail(ChatFormat::kMistralInst, {{"user", "Hi"}}, false) ==
        "<s> [INST] Hi [/INST]");
}

TEST_CASE("chat format: Mistral [INST] requires alternating user/assistant turns") {
  Result<std::string> two_users =
      format_chat(ChatFormat::kMistralInst, {{{"user", "a"}, {"user", "b"}}}, true);
  REQUIRE_FALSE(two_users.is_ok());
  CHECK(two_users.status().message().find("must alternate") != std::string::npos);
  Result<std::string> assistant_first =
      format_chat(ChatFormat::kMistralInst, {{{"assistant", "a"}}}, true);
  CHECK_FALSE(assistant_first.is_ok());
  Result<std::string> late_system =
      format_chat(ChatFormat::kMistralInst, {{{"user", "a"}, {"system", "b"}}}, true);
  REQUIRE_FALSE(late_system.is_ok());
  CHECK(late_system.status().message().find("message 1 has role \"system\"") != std::string::npos);
}

TEST_CASE("chat format: detection from the chat template and the special tokens") {
  CHECK(detect_chat_format("{{ '<|im_start|>' + message['role'] }}", false, false) ==
        ChatFormat::kChatML);
  CHECK(detect_chat_format("{{ '[INST] ' + message['content'] + ' [/INST]' }}", false, false) ==
        ChatFormat::kMistralInst);
  CHECK_FALSE(detect_chat_format("{{ '<|start_header_id|>' }}", true, false).has_value());
  CHECK(detect_chat_format("", true, false) == ChatFormat::kChatML);
  CHECK(detect_chat_format("", false, true) == ChatFormat::kMistralInst);
  CHECK_FALSE(detect_chat_format("", false, false).has_value());
  CHECK(chat_format_name(ChatFormat::kChatML) == "chatml");
  CHECK(chat_format_name(ChatFormat::kMistralInst) == "mistral_inst");

  CHECK(testing::synthetic().chat_format() == ChatFormat::kChatML);
  if (const Tokenizer* qwen = testing::qwen3()) {
    CHECK(qwen->chat_format() == ChatFormat::kChatML);
    // The ChatML text tokenizes into the special tokens, not their spelling.
    const std::string prompt = format_or_fail(ChatFormat::kChatML, {{"user", "Hi"}}, true);
    const std::vector<int32_t> ids = testing::encode_or_fail(*qwen, prompt);
    CHECK(std::count(ids.begin(), ids.end(), 151644) == 2);
    CHECK(std::count(ids.begin(), ids.end(), 151645) == 1);
  }
  if (const Tokenizer* llama = testing::llama2()) {
    // A base tokenizer without a chat template.
    CHECK_FALSE(llama->chat_format().has_value());
  }
}

}  // namespace dancemoe::tokenizer
