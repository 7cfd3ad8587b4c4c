// BpeModel: the "model" section of a tokenizer.json with type "BPE" — a
// vocabulary (token string -> id) and ranked merges — and the merge loop that
// turns one pre-tokenized word into token ids, as HF tokenizers' BPE does:
//
//  1. each code point of the word becomes its vocabulary token; one that is
//     not in the vocabulary becomes its UTF-8 bytes as <0xNN> tokens when
//     byte_fallback is on and those tokens exist, else the unk token (runs
//     of unknowns fused into one when fuse_unk), else it is dropped;
//  2. repeatedly the adjacent pair with the lowest merge rank is merged
//     (ties: leftmost first), with a min-heap and a linked list of symbols,
//     O(n log n) in the word length, so a 100 kB "word" is fine;
//  3. with ignore_merges, a word that is itself in the vocabulary is one token.
//
// Load-time checks (errors name the JSON path): vocab is an object of
// non-negative integer ids below 2^22 without duplicates; every merge is
// "left right" or ["left", "right"] with both parts and their concatenation
// in the vocabulary; unk_token, if set, is in the vocabulary. Not supported
// (load error): dropout > 0, a non-empty continuing_subword_prefix or
// end_of_word_suffix.
//
// Immutable after parse; all methods const and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {
class JsonField;
}  // namespace dancemoe

namespace dancemoe::tokenizer {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // Ids index dense tables, so a hostile file must not make them huge; real
  // vocabularies stay below 300k.
  static constexpr int64_t kMaxTokenId = (int64_t{1} << 22) - 1;

  // Parses a "model" node (type must be "BPE").
  static Result<std::unique_ptr<BpeModel>> parse(const JsonField& field);

  // Appends the ids of `word` (valid UTF-8, non-empty) to `ids`.
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token of `id`, or nullptr if the vocabulary has no such id.
  const std::string* id_to_token(int32_t id) const;
  // Largest id in the vocabulary, -1 if it is empty.
  int32_t max_id() const { return static_cast<int32_t>(id_to_token_.size()) - 1; }
  size_t n_merges() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  struct Symbol {
    int32_t id;
    int32_t prev;  // index of the previous live symbol, -1 at the start
    int32_t next;  // index of the next live symbol, -1 at the end
    bool live;
  };

  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  const Merge* find_merge(int32_t left, int32_t right) const;
  std::optional<int32_t> char_id(std::string_view ch, char32_t code_point) const;
  void initial_symbols(std::string_view word, std::vector<Symbol>& symbols) const;
  void merge_all(std::vector<Symbol>& symbols) const;

  Status parse_vocab(const JsonField& vocab);
  Status parse_merges(const JsonField& merges);

  TokenIdMap vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> id_present_;
  std::unordered_map<uint64_t, Merge> merges_;
  // Single-code-point tokens below U+0800 (all of the byte-level alphabet)
  // looked up by code point instead of hashing; -1 = not in the vocabulary.
  std::vector<int32_t> small_char_ids_;
  std::array<int32_t, 256> byte_fallback_ids_{};
  std::optional<int32_t> unk_id_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
};

}  // namespace dancemoe::tokenizer
