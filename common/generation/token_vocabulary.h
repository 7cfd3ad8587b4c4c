// TokenVocabulary: the bytes each token id adds to generated text, in the
// form constrained decoding walks them (token_constraint.h): ids sorted by
// their bytes, with the length each shares with the one before, so a walk
// over the whole vocabulary follows every shared prefix once.
//
// Special tokens and ids without text have no bytes and never appear in
// constrained output (the end-of-sequence ids are handled apart). Built
// once per tokenizer and shared by requests; immutable, thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace dancemoe {

struct TokenVocabulary {
  int32_t n_ids = 0;                // the logits row's length
  std::vector<std::string> bytes;   // per id
  std::vector<int32_t> sorted_ids;  // ids with bytes, by their bytes
  std::vector<uint32_t> shared;     // shared[i]: common prefix of sorted_ids[i] and [i - 1]
  size_t max_token_bytes = 0;

  // `n_ids`: the model's vocabulary size (may exceed the tokenizer's).
  static std::shared_ptr<const TokenVocabulary> build(const tokenizer::Tokenizer& tokenizer,
                                                      int32_t n_ids);
};

}  // namespace dancemoe
