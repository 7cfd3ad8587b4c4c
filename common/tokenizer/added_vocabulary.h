// AddedVocabulary: the "added_tokens" of a tokenizer.json (special tokens
// such as <|im_start|> or <s>, and other added tokens such as <think>) and
// the splitting of text around them, as HF tokenizers' AddedVocabulary does:
//
//  * tokens with normalized=false are found in the raw text, tokens with
//    normalized=true in the normalised text of each remaining section, by
//    their own normalised form (under Llama's Prepend normaliser a
//    normalized token "x" is found as "▁x");
//  * matching is leftmost-longest and non-overlapping (aho-corasick
//    LeftmostLongest in HF); a match rejected by single_word is skipped
//    whole, and the search resumes after it;
//  * single_word: the match must not touch a word character (alphanumeric
//    or '_') on either side;
//  * lstrip / rstrip: the match swallows the whitespace before / after it
//    (lstrip never reaches into the previous match).
//
// Immutable after parse; all methods const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "common/tokenizer/bpe_model.h"

namespace dancemoe {
class JsonField;
}  // namespace dancemoe

namespace dancemoe::tokenizer {

class Normalizer;

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A piece of text: either an added token (token_idx >= 0) covering
// [begin, end) of the input, or plain text to be normalised and encoded.
struct TextSplit {
  size_t begin;
  size_t end;
  int32_t token_idx;  // index into AddedVocabulary::tokens(), -1 for text
};

class AddedVocabulary {
 public:
  AddedVocabulary();  // empty
  // Parses the "added_tokens" array (may be absent/null: empty vocabulary).
  static Result<AddedVocabulary> parse(const std::optional<JsonField>& field);

  // Matches normalized=true tokens by their content passed through
  // `normalizer` from now on (the loader calls this once).
  Status normalize_match_texts(const Normalizer& normalizer);

  // Splits `text` around the added tokens with `normalized` == the flag.
  std::vector<TextSplit> split(std::string_view text, bool normalized) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find_by_id(int32_t id) const;
  const AddedToken* find_by_content(std::string_view content) const;
  bool has_normalized_tokens() const { return has_normalized_; }

 private:
  // For each first byte, indices of the tokens starting with it, longest
  // first, per flavour (raw text / normalised text).
  struct Index {
    std::vector<std::vector<int32_t>> by_first_byte;
  };
  std::optional<int32_t> longest_match_at(std::string_view text, size_t pos,
                                          const Index& index) const;
  void build_indexes();

  std::vector<AddedToken> tokens_;
  std::vector<std::string> match_texts_;  // per token: the text it is found by
  std::vector<int32_t> id_to_idx_;        // id -> index into tokens_, -1 if none
  TokenIdMap content_to_idx_;
  Index raw_index_;
  Index normalized_index_;
  bool has_normalized_ = false;
};

}  // namespace dancemoe::tokenizer
