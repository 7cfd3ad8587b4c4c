// Tokenizer: a HuggingFace tokenizer.json (byte-level BPE as in Qwen, or
// sentencepiece-style BPE with byte fallback as in Llama/Mistral) loaded into
// C++, producing the same ids as HF tokenizers' encode and the same text as
// its decode. The pipeline, each part in its own file:
//
//   text -> added_vocabulary (split around special/added tokens, raw text)
//        -> normalizer (per remaining section) -> pre_tokenizer -> bpe_model
//        -> post_processor (only with add_special_tokens)
//   ids  -> token strings (skipping special tokens on request) -> decoder
//
// Supported component types are listed in each component's header; any
// other type, malformed JSON or inconsistent vocabulary/merges is a load
// error naming the file, the JSON path and the value. "truncation" and
// "padding" in tokenizer.json are ignored (serving never truncates).
//
// tokenizer_config.json beside tokenizer.json, when present, provides
// bos_token, eos_token and chat_template (a string, or HF's list of named
// templates; a null one is none). Its add_bos_token/add_eos_token are
// not consulted: the tokenizer.json post_processor already encodes them for
// the supported families.
//
// Input text that is not valid UTF-8 is made valid first by replacing each
// maximal ill-formed subpart with U+FFFD (utf8.h), so encode never fails on
// odd bytes and the result is deterministic.
//
// Immutable after load; all const methods are thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/status.h"
#include "common/tokenizer/added_vocabulary.h"
#include "common/tokenizer/chat_format.h"

namespace dancemoe::tokenizer {

class BpeModel;
class Decoder;
class Normalizer;
class PostProcessor;
class PreTokenizer;

class Tokenizer {
 public:
  // Reads `path` (a tokenizer.json, or a model directory holding one) and,
  // when it exists, tokenizer_config.json in the same directory.
  static Result<std::unique_ptr<Tokenizer>> load(const std::filesystem::path& path);
  // From the texts of both files (`tokenizer_config_json` may be empty);
  // `source_name` prefixes error messages (e.g. the directory).
  static Result<std::unique_ptr<Tokenizer>> from_json_text(std::string_view tokenizer_json,
                                                           std::string_view tokenizer_config_json,
                                                           std::string_view source_name);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // add_special_tokens: what HF's encode(add_special_tokens=True) adds (the
  // post_processor template, e.g. Llama's <s>); false: the raw ids. Errors
  // only when the regex engine gives up on a pathological input.
  Result<std::vector<int32_t>> encode(std::string_view utf8_text, bool add_special_tokens) const;
  // Ids that are not in the vocabulary are skipped (as HF does).
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  // Max id + 1 over the model vocabulary and the added tokens.
  int32_t vocab_size() const { return vocab_size_; }
  // Id of an added token or vocabulary token with exactly this text.
  std::optional<int32_t> token_id(std::string_view token) const;
  // The vocabulary string of `id` (byte-level or ▁ form, not decoded text).
  std::optional<std::string_view> token_text(int32_t id) const;
  // The bytes `id` adds to decoded text in the middle of a sequence (may end
  // inside a UTF-8 character); nullopt for special tokens and unknown ids.
  // For constrained decoding (common/generation/token_vocabulary.h).
  std::optional<std::string> token_bytes(int32_t id) const;
  // True for added tokens marked "special" (what skip_special_tokens drops).
  bool is_special(int32_t id) const;
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  // From the chat template and special tokens; nullopt for a base model
  // whose tokenizer indicates no supported chat format.
  std::optional<ChatFormat> chat_format() const;
  // tokenizer_config.json's chat_template ("" if none; with named templates,
  // the one named "default").
  const std::string& chat_template() const { return chat_template_; }
  // Every chat template as (name, source), in file order; a single template
  // is named "default". Empty when there is none. See chat_template.h.
  const std::vector<std::pair<std::string, std::string>>& chat_templates() const {
    return chat_templates_;
  }

 private:
  Tokenizer();
  Status parse_tokenizer_json(std::string_view text);
  Status parse_config_json(std::string_view text);
  Status encode_section(std::string section, std::vector<int32_t>& ids) const;
  Status encode_normalized(std::string_view text, std::vector<int32_t>& ids) const;

  std::string source_;         // tokenizer.json's name in errors
  std::string config_source_;  // tokenizer_config.json's name in errors
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  AddedVocabulary added_;
  int32_t vocab_size_ = 0;
  std::optional<int32_t> bos_id_;
  std::optional<int32_t> eos_id_;
  std::string chat_template_;
  std::vector<std::pair<std::string, std::string>> chat_templates_;
};

}  // namespace dancemoe::tokenizer
