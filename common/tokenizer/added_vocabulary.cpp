#include "common/tokenizer/added_vocabulary.h"

#include <utf8proc.h>

#include <algorithm>

#include "common/base/json_field.h"
#include "common/tokenizer/normalizer.h"
#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

// Unicode \w: letters, marks, numbers, connector punctuation ('_').
bool is_word_char(char32_t cp) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

// Start of the code point that ends at `end` (text valid UTF-8, end > 0).
size_t previous_char_start(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  return start;
}

char32_t char_at(std::string_view text, size_t pos) {
  const size_t length = utf8_sequence_length(text, pos);
  return length == 0 ? kReplacementChar : utf8_decode_at(text, pos, length);
}

bool ends_with_word_char(std::string_view text, size_t end) {
  return end > 0 && is_word_char(char_at(text, previous_char_start(text, end)));
}

bool starts_with_word_char(std::string_view text, size_t begin) {
  return begin < text.size() && is_word_char(char_at(text, begin));
}

}  // namespace

AddedVocabulary::AddedVocabulary() {
  raw_index_.by_first_byte.resize(256);
  normalized_index_.by_first_byte.resize(256);
}

Result<AddedVocabulary> AddedVocabulary::parse(const std::optional<JsonField>& field) {
  AddedVocabulary vocabulary;
  if (!field) return vocabulary;
  DMOE_RETURN_IF_ERROR(field->expect_array());
  for (size_t i = 0; i < field->json().size(); ++i) {
    const JsonField entry = field->element(i);
    AddedToken token;
    DMOE_ASSIGN_OR_RETURN(JsonField id_field, entry.member("id"));
    DMOE_ASSIGN_OR_RETURN(int64_t id, id_field.as_int());
    if (id < 0 || id > BpeModel::kMaxTokenId) {
      return id_field.error("expected a token id in [0, " + std::to_string(BpeModel::kMaxTokenId) +
                            "], found " + std::to_string(id));
    }
    token.id = static_cast<int32_t>(id);
    DMOE_ASSIGN_OR_RETURN(token.content, entry.required_string("content"));
    if (token.content.empty()) return entry.error("an added token's content is empty");
    DMOE_ASSIGN_OR_RETURN(token.special, entry.bool_or("special", false));
    DMOE_ASSIGN_OR_RETURN(token.single_word, entry.bool_or("single_word", false));
    DMOE_ASSIGN_OR_RETURN(token.lstrip, entry.bool_or("lstrip", false));
    DMOE_ASSIGN_OR_RETURN(token.rstrip, entry.bool_or("rstrip", false));
    // HF's default: special tokens are matched in the raw text.
    DMOE_ASSIGN_OR_RETURN(token.normalized, entry.bool_or("normalized", !token.special));
    if (vocabulary.find_by_id(token.id) != nullptr) {
      return id_field.error("id " + std::to_string(token.id) + " is used by two added tokens");
    }
    if (vocabulary.find_by_content(token.content) != nullptr) {
      return entry.error("added token " + json_quote(token.content) + " appears twice");
    }
    if (static_cast<size_t>(token.id) >= vocabulary.id_to_idx_.size()) {
      vocabulary.id_to_idx_.resize(static_cast<size_t>(token.id) + 1, -1);
    }
    const auto idx = static_cast<int32_t>(vocabulary.tokens_.size());
    vocabulary.id_to_idx_[static_cast<size_t>(token.id)] = idx;
    vocabulary.content_to_idx_.emplace(token.content, idx);
    vocabulary.has_normalized_ = vocabulary.has_normalized_ || token.normalized;
    vocabulary.match_texts_.push_back(token.content);
    vocabulary.tokens_.push_back(std::move(token));
  }
  vocabulary.build_indexes();
  return vocabulary;
}

Status AddedVocabulary::normalize_match_texts(const Normalizer& normalizer) {
  for (size_t idx = 0; idx < tokens_.size(); ++idx) {
    if (!tokens_[idx].normalized) continue;
    std::string text = tokens_[idx].content;
    DMOE_RETURN_IF_ERROR(normalizer.normalize(text));
    match_texts_[idx] = std::move(text);
  }
  build_indexes();
  return Status::ok();
}

void AddedVocabulary::build_indexes() {
  for (Index* index : {&raw_index_, &normalized_index_}) {
    for (std::vector<int32_t>& bucket : index->by_first_byte) bucket.clear();
  }
  for (size_t idx = 0; idx < tokens_.size(); ++idx) {
    const std::string& text = match_texts_[idx];
    if (text.empty()) continue;  // a token that normalises to nothing is never found
    Index& index = tokens_[idx].normalized ? normalized_index_ : raw_index_;
    index.by_first_byte[static_cast<uint8_t>(text[0])].push_back(static_cast<int32_t>(idx));
  }
  // Longest first, so that the first match in a bucket is the longest.
  for (Index* index : {&raw_index_, &normalized_index_}) {
    for (std::vector<int32_t>& bucket : index->by_first_byte) {
      std::stable_sort(bucket.begin(), bucket.end(), [this](int32_t a, int32_t b) {
        return match_texts_[static_cast<size_t>(a)].size() >
               match_texts_[static_cast<size_t>(b)].size();
      });
    }
  }
}

const AddedToken* AddedVocabulary::find_by_id(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_idx_.size()) return nullptr;
  const int32_t idx = id_to_idx_[static_cast<size_t>(id)];
  return idx < 0 ? nullptr : &tokens_[static_cast<size_t>(idx)];
}

const AddedToken* AddedVocabulary::find_by_content(std::string_view content) const {
  auto it = content_to_idx_.find(content);
  return it == content_to_idx_.end() ? nullptr : &tokens_[static_cast<size_t>(it->second)];
}

std::optional<int32_t> AddedVocabulary::longest_match_at(std::string_view text, size_t pos,
                                                         const Index& index) const {
  for (int32_t idx : index.by_first_byte[static_cast<uint8_t>(text[pos])]) {
    const std::string& match = match_texts_[static_cast<size_t>(idx)];
    if (text.compare(pos, match.size(), match) == 0) return idx;
  }
  return std::nullopt;
}

std::vector<TextSplit> AddedVocabulary::split(std::string_view text, bool normalized) const {
  const Index& index = normalized ? normalized_index_ : raw_index_;
  std::vector<TextSplit> splits;
  size_t start_offset = 0;  // end of the previous added-token split
  size_t pos = 0;
  while (pos < text.size()) {
    const std::optional<int32_t> idx = longest_match_at(text, pos, index);
    if (!idx) {
      ++pos;  // byte steps are safe: a token's first byte is never a continuation byte
      continue;
    }
    const AddedToken& token = tokens_[static_cast<size_t>(*idx)];
    size_t start = pos;
    size_t stop = pos + match_texts_[static_cast<size_t>(*idx)].size();
    pos = stop;
    if (token.single_word &&
        (ends_with_word_char(text, start) || starts_with_word_char(text, stop))) {
      continue;
    }
    if (token.lstrip) {
      while (start > start_offset) {
        const size_t prev = previous_char_start(text, start);
        if (!is_white_space(char_at(text, prev))) break;
        start = prev;
      }
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        const size_t length = utf8_sequence_length(text, stop);
        if (length == 0 || !is_white_space(utf8_decode_at(text, stop, length))) break;
        stop += length;
      }
      pos = stop;
    }
    if (start_offset < start) splits.push_back({start_offset, start, -1});
    splits.push_back({start, stop, *idx});
    start_offset = stop;
  }
  if (start_offset < text.size()) splits.push_back({start_offset, text.size(), -1});
  return splits;
}

}  // namespace dancemoe::tokenizer
