// A small, deterministic byte-level BPE trainer, used to give the project's
// random-weight demo and test models a real (if tiny) tokenizer.
//
// Training follows the classic algorithm: the corpus is pre-tokenized into
// byte-level words; every word starts as its code points (one per byte);
// repeatedly the most frequent adjacent pair over all words (weighted by
// word count) is merged, ties broken by the lexicographically smallest
// (left, right) pair, so the result depends only on the input. When the
// corpus has no pair left before `n_tokens` is reached, "filler" merges are
// added: pairs of already learned tokens in a fixed order, whose
// concatenation is new. Filler tokens are valid BPE tokens (merges of two
// vocabulary tokens) that simply occur rarely in text.
//
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dancemoe::tokenizer {

struct BpeTrainingResult {
  // Token strings in id order: the 256 byte-level characters (sorted by code
  // point, as GPT-2 and Qwen order them), then one token per merge.
  std::vector<std::string> vocab;
  // Merges in rank order; each concatenation is in vocab (a later merge can
  // produce a string an earlier one already did: one token, two merges).
  std::vector<std::pair<std::string, std::string>> merges;
};

// `word_counts`: byte-level words (pre-tokenizer output) and how often each
// occurs. `n_tokens` >= 256 is the vocabulary size to reach.
BpeTrainingResult train_byte_level_bpe(const std::map<std::string, int64_t>& word_counts,
                                       int32_t n_tokens);

}  // namespace dancemoe::tokenizer
