#include "common/tokenizer/tokenizer.h"

#include "common/base/file_util.h"
#include "common/base/json_field.h"
#include "common/tokenizer/bpe_model.h"
#include "common/tokenizer/decoder.h"
#include "common/tokenizer/normalizer.h"
#include "common/tokenizer/post_processor.h"
#include "common/tokenizer/pre_tokenizer.h"
#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

// Real tokenizer.json files are at most tens of MB; a far bigger file is a
// wrong path (e.g. a weights file), not something to read into memory.
constexpr uintmax_t kMaxFileBytes = uintmax_t{1} << 30;

Result<std::string> read_tokenizer_file(const std::filesystem::path& path) {
  return dancemoe::read_file(path, kMaxFileBytes);
}

// A token named in tokenizer_config.json: a string, an AddedToken object
// {"content": ...}, or null.
Result<std::optional<std::string>> config_token(const JsonField& config, std::string_view key) {
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> field, config.optional_member(key));
  if (!field) return std::optional<std::string>();
  if (field->json().is_object()) {
    DMOE_ASSIGN_OR_RETURN(std::string content, field->required_string("content"));
    return std::optional<std::string>(std::move(content));
  }
  DMOE_ASSIGN_OR_RETURN(std::string content, field->as_string());
  return std::optional<std::string>(std::move(content));
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path tokenizer_json =
      std::filesystem::is_directory(path, ec) ? path / "tokenizer.json" : path;
  DMOE_ASSIGN_OR_RETURN(std::string json_text, read_tokenizer_file(tokenizer_json));
  const std::filesystem::path config_path = tokenizer_json.parent_path() / "tokenizer_config.json";
  std::string config_text;
  if (std::filesystem::exists(config_path, ec)) {
    DMOE_ASSIGN_OR_RETURN(config_text, read_tokenizer_file(config_path));
  }
  auto tokenizer = std::unique_ptr<Tokenizer>(new Tokenizer());
  tokenizer->source_ = tokenizer_json.string();
  tokenizer->config_source_ = config_path.string();
  DMOE_RETURN_IF_ERROR(tokenizer->parse_tokenizer_json(json_text));
  if (!config_text.empty()) DMOE_RETURN_IF_ERROR(tokenizer->parse_config_json(config_text));
  return tokenizer;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_json_text(std::string_view tokenizer_json,
                                                             std::string_view tokenizer_config_json,
                                                             std::string_view source_name) {
  auto tokenizer = std::unique_ptr<Tokenizer>(new Tokenizer());
  tokenizer->source_ = std::string(source_name);
  tokenizer->config_source_ = std::string(source_name) + " (tokenizer_config.json)";
  DMOE_RETURN_IF_ERROR(tokenizer->parse_tokenizer_json(tokenizer_json));
  if (!tokenizer_config_json.empty()) {
    DMOE_RETURN_IF_ERROR(tokenizer->parse_config_json(tokenizer_config_json));
  }
  return tokenizer;
}

Status Tokenizer::parse_tokenizer_json(std::string_view text) {
  DMOE_ASSIGN_OR_RETURN(const nlohmann::json document, parse_json_document(text, source_));
  const JsonField root(document, source_);
  DMOE_RETURN_IF_ERROR(root.expect_object());

  DMOE_ASSIGN_OR_RETURN(JsonField model, root.member("model"));
  DMOE_ASSIGN_OR_RETURN(model_, BpeModel::parse(model));
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> added, root.optional_member("added_tokens"));
  DMOE_ASSIGN_OR_RETURN(added_, AddedVocabulary::parse(added));
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> normalizer, root.optional_member("normalizer"));
  if (normalizer) {
    DMOE_ASSIGN_OR_RETURN(normalizer_, Normalizer::parse(*normalizer));
    DMOE_RETURN_IF_ERROR(added_.normalize_match_texts(*normalizer_));
  }
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> pre, root.optional_member("pre_tokenizer"));
  if (pre) {
    DMOE_ASSIGN_OR_RETURN(pre_tokenizer_, PreTokenizer::parse(*pre));
  }
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> post, root.optional_member("post_processor"));
  if (post) {
    DMOE_ASSIGN_OR_RETURN(post_processor_, PostProcessor::parse(*post));
  }
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> decoder, root.optional_member("decoder"));
  if (decoder) {
    DMOE_ASSIGN_OR_RETURN(decoder_, Decoder::parse(*decoder));
  }

  vocab_size_ = model_->max_id() + 1;
  for (const AddedToken& token : added_.tokens()) vocab_size_ = std::max(vocab_size_, token.id + 1);
  if (post_processor_) {
    for (int32_t id : post_processor_->special_ids()) {
      if (!token_text(id)) {
        return post->error("the template adds token id " + std::to_string(id) +
                           ", which is neither in model.vocab nor in added_tokens");
      }
    }
  }
  return Status::ok();
}

Status Tokenizer::parse_config_json(std::string_view text) {
  DMOE_ASSIGN_OR_RETURN(const nlohmann::json document, parse_json_document(text, config_source_));
  const JsonField root(document, config_source_);
  DMOE_RETURN_IF_ERROR(root.expect_object());
  for (const char* key : {"bos_token", "eos_token"}) {
    DMOE_ASSIGN_OR_RETURN(std::optional<std::string> token, config_token(root, key));
    if (!token) continue;
    const std::optional<int32_t> id = token_id(*token);
    if (!id) {
      DMOE_ASSIGN_OR_RETURN(JsonField field, root.member(key));
      return field.error(json_quote(*token) + " is not a token of " + source_);
    }
    (std::string_view(key) == "bos_token" ? bos_id_ : eos_id_) = id;
  }
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> chat, root.optional_member("chat_template"));
  if (chat && chat->json().is_array()) {
    // Several named templates (HF): "default", "tool_use", ...
    for (size_t i = 0; i < chat->json().size(); ++i) {
      const JsonField entry = chat->element(i);
      DMOE_ASSIGN_OR_RETURN(std::string name, entry.required_string("name"));
      DMOE_ASSIGN_OR_RETURN(std::string source, entry.required_string("template"));
      if (name == "default") chat_template_ = source;
      chat_templates_.emplace_back(std::move(name), std::move(source));
    }
  } else if (chat && !chat->json().is_null()) {
    DMOE_ASSIGN_OR_RETURN(chat_template_, chat->as_string());
    chat_templates_.emplace_back("default", chat_template_);
  }
  return Status::ok();
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (const AddedToken* added = added_.find_by_content(token)) return added->id;
  return model_->token_to_id(token);
}

std::optional<std::string_view> Tokenizer::token_text(int32_t id) const {
  if (const AddedToken* added = added_.find_by_id(id)) return std::string_view(added->content);
  if (const std::string* token = model_->id_to_token(id)) return std::string_view(*token);
  return std::nullopt;
}

std::optional<std::string> Tokenizer::token_bytes(int32_t id) const {
  if (is_special(id)) return std::nullopt;
  const std::optional<std::string_view> text = token_text(id);
  if (!text) return std::nullopt;
  if (!decoder_) return std::string(*text);
  return decoder_->token_bytes(std::string(*text));
}

bool Tokenizer::is_special(int32_t id) const {
  const AddedToken* added = added_.find_by_id(id);
  return added != nullptr && added->special;
}

std::optional<ChatFormat> Tokenizer::chat_format() const {
  return detect_chat_format(chat_template_, token_id("<|im_start|>").has_value(),
                            token_id("[INST]").has_value());
}

Status Tokenizer::encode_normalized(std::string_view text, std::vector<int32_t>& ids) const {
  std::vector<std::string> words;
  if (pre_tokenizer_) {
    DMOE_RETURN_IF_ERROR(pre_tokenizer_->pre_tokenize(text, words));
  } else {
    words.emplace_back(text);
  }
  for (const std::string& word : words) model_->encode_word(word, ids);
  return Status::ok();
}

Status Tokenizer::encode_section(std::string section, std::vector<int32_t>& ids) const {
  if (normalizer_) DMOE_RETURN_IF_ERROR(normalizer_->normalize(section));
  if (section.empty()) return Status::ok();
  if (!added_.has_normalized_tokens()) return encode_normalized(section, ids);
  for (const TextSplit& split : added_.split(section, /*normalized=*/true)) {
    if (split.token_idx >= 0) {
      ids.push_back(added_.tokens()[static_cast<size_t>(split.token_idx)].id);
    } else {
      DMOE_RETURN_IF_ERROR(encode_normalized(
          std::string_view(section).substr(split.begin, split.end - split.begin), ids));
    }
  }
  return Status::ok();
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view utf8_text,
                                               bool add_special_tokens) const {
  std::string repaired;
  std::string_view text = utf8_text;
  if (!utf8_is_valid(text)) {
    repaired = utf8_make_valid(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const TextSplit& split : added_.split(text, /*normalized=*/false)) {
    if (split.token_idx >= 0) {
      ids.push_back(added_.tokens()[static_cast<size_t>(split.token_idx)].id);
    } else {
      DMOE_RETURN_IF_ERROR(
          encode_section(std::string(text.substr(split.begin, split.end - split.begin)), ids));
    }
  }
  if (add_special_tokens && post_processor_) ids = post_processor_->process(std::move(ids));
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const AddedToken* added = added_.find_by_id(id)) {
      if (!(skip_special_tokens && added->special)) tokens.push_back(added->content);
    } else if (const std::string* token = model_->id_to_token(id)) {
      tokens.push_back(*token);
    }
  }
  if (decoder_) return decoder_->decode(std::move(tokens));
  std::string text;  // HF joins with spaces when there is no decoder
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) text += ' ';
    text += tokens[i];
  }
  return text;
}

}  // namespace dancemoe::tokenizer
