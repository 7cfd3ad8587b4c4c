// Synthetic tokenizer for the project's random-weight demo and test models
// (no real tokenizer may be committed): the text of a tokenizer.json and a
// tokenizer_config.json in HuggingFace's format, with Qwen's pipeline —
// NFC normaliser, Split(Qwen regex, Isolated) + ByteLevel pre-tokenizer,
// byte-level BPE, ByteLevel decoder — so the model code exercises the same
// path as a real Qwen checkpoint.
//
// Vocabulary (exactly vocab_size ids):
//   0..255            the 256 byte-level characters (every text encodes)
//   256..n-4          merges learned by bpe_trainer.h from an English text
//                     embedded in synthetic_tokenizer.cpp, then filler merges
//   n-3, n-2, n-1     <|endoftext|>, <|im_start|>, <|im_end|> (special)
// tokenizer_config.json: eos_token <|im_end|>, pad_token <|endoftext|>, no
// bos, and a ChatML chat_template (chat_format.h kChatML).
//
// Deterministic: the same vocab_size always gives byte-identical files.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/base/status.h"

namespace dancemoe::tokenizer {

struct SyntheticTokenizerFiles {
  std::string tokenizer_json;
  std::string tokenizer_config_json;
};

inline constexpr int32_t kMinSyntheticVocabSize = 259;
inline constexpr int32_t kMaxSyntheticVocabSize = 1 << 20;

// invalid_argument unless kMinSyntheticVocabSize <= vocab_size <=
// kMaxSyntheticVocabSize.
Result<SyntheticTokenizerFiles> make_synthetic_tokenizer(int32_t vocab_size);

// Writes tokenizer.json and tokenizer_config.json into `dir` (which must
// exist).
Status write_synthetic_tokenizer(const std::filesystem::path& dir, int32_t vocab_size);

}  // namespace dancemoe::tokenizer
