#include "common/tokenizer/bpe_trainer.h"

#include <algorithm>
#include <unordered_map>

#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

struct Word {
  std::vector<int32_t> symbols;
  int64_t count;
};

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

class Trainer {
 public:
  explicit Trainer(BpeTrainingResult& result) : result_(result) {
    std::vector<char32_t> alphabet;
    for (int b = 0; b < 256; ++b) alphabet.push_back(byte_to_char(static_cast<uint8_t>(b)));
    std::sort(alphabet.begin(), alphabet.end());
    for (char32_t cp : alphabet) {
      std::string token;
      utf8_append(token, cp);
      add_token(token);
    }
  }

  void add_words(const std::map<std::string, int64_t>& word_counts) {
    for (const auto& [text, count] : word_counts) {
      Word word{{}, count};
      size_t pos = 0;
      bool in_alphabet = true;
      while (pos < text.size() && in_alphabet) {
        const size_t length = utf8_sequence_length(text, pos);
        auto it = length == 0 ? ids_.end() : ids_.find(text.substr(pos, length));
        in_alphabet = it != ids_.end() && it->second < 256;
        if (in_alphabet) word.symbols.push_back(it->second);
        pos += length == 0 ? 1 : length;
      }
      // Words outside the byte-level alphabet cannot come from the
      // ByteLevel pre-tokenizer; they are ignored rather than trained on.
      if (in_alphabet && word.symbols.size() > 1 && count > 0) words_.push_back(std::move(word));
    }
  }

  // One corpus merge; false when no word has two symbols left.
  bool learn_one() {
    std::unordered_map<uint64_t, int64_t> pair_counts;
    for (const Word& word : words_) {
      for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
        pair_counts[pair_key(word.symbols[i], word.symbols[i + 1])] += word.count;
      }
    }
    if (pair_counts.empty()) return false;
    uint64_t best = 0;
    int64_t best_count = -1;
    for (const auto& [key, count] : pair_counts) {
      if (count > best_count || (count == best_count && pair_less(key, best))) {
        best = key;
        best_count = count;
      }
    }
    const auto left = static_cast<int32_t>(best >> 32);
    const auto right = static_cast<int32_t>(best & 0xFFFFFFFFu);
    const int32_t merged = add_merge(left, right);
    for (Word& word : words_) apply_merge(word, left, right, merged);
    return true;
  }

  // Adds filler merges of learned tokens until the vocabulary has n_tokens.
  void fill(size_t n_tokens) {
    const size_t first = result_.vocab.size() > 256 ? 256 : 0;
    for (size_t m = first; result_.vocab.size() < n_tokens; ++m) {
      for (size_t i = first; i <= m && result_.vocab.size() < n_tokens; ++i) {
        try_filler(m, i);
        if (i != m && result_.vocab.size() < n_tokens) try_filler(i, m);
      }
    }
  }

 private:
  bool pair_less(uint64_t a, uint64_t b) const {
    const std::string& a_left = result_.vocab[a >> 32];
    const std::string& b_left = result_.vocab[b >> 32];
    if (a_left != b_left) return a_left < b_left;
    return result_.vocab[a & 0xFFFFFFFFu] < result_.vocab[b & 0xFFFFFFFFu];
  }

  int32_t add_token(const std::string& token) {
    auto [it, inserted] = ids_.emplace(token, static_cast<int32_t>(result_.vocab.size()));
    if (inserted) result_.vocab.push_back(token);
    return it->second;
  }

  // Records the merge; its result may already exist (another split of the
  // same string), which BPE allows.
  int32_t add_merge(int32_t left, int32_t right) {
    const std::string& a = result_.vocab[static_cast<size_t>(left)];
    const std::string& b = result_.vocab[static_cast<size_t>(right)];
    result_.merges.emplace_back(a, b);
    return add_token(a + b);
  }

  void try_filler(size_t left, size_t right) {
    const std::string merged = result_.vocab[left] + result_.vocab[right];
    if (ids_.count(merged) != 0) return;
    add_merge(static_cast<int32_t>(left), static_cast<int32_t>(right));
  }

  static void apply_merge(Word& word, int32_t left, int32_t right, int32_t merged) {
    std::vector<int32_t>& s = word.symbols;
    size_t out = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (i + 1 < s.size() && s[i] == left && s[i + 1] == right) {
        s[out++] = merged;
        ++i;
      } else {
        s[out++] = s[i];
      }
    }
    s.resize(out);
  }

  BpeTrainingResult& result_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<Word> words_;
};

}  // namespace

BpeTrainingResult train_byte_level_bpe(const std::map<std::string, int64_t>& word_counts,
                                       int32_t n_tokens) {
  BpeTrainingResult result;
  Trainer trainer(result);
  trainer.add_words(word_counts);
  const size_t target = static_cast<size_t>(std::max(n_tokens, 256));
  while (result.vocab.size() < target && trainer.learn_one()) {
  }
  trainer.fill(target);
  return result;
}

}  // namespace dancemoe::tokenizer
