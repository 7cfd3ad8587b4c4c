// The tokenizer of a GGUF file, both ways: GGUF's `tokenizer.ggml.*`
// metadata (as llama.cpp's converter writes it) <-> the HuggingFace
// tokenizer.json + tokenizer_config.json that common/tokenizer loads.
//
// Two kinds of tokenizer.ggml.model are supported:
//   "gpt2"   byte-level BPE: tokens, token_type, merges ("a b"), and
//            tokenizer.ggml.pre naming the pre-tokenizer regex ("qwen2",
//            "llama-bpe", "gpt-2"/"default"); Qwen2 also NFC-normalises.
//   "llama"  sentencepiece-style BPE with byte fallback (<0xNN> tokens):
//            tokens, scores, token_type, and merges when present -- when
//            absent they are derived from the scores the way HF's
//            sentencepiece converter does (every split of a piece into two
//            pieces of the vocabulary, ordered by the piece's score).
// token_type 3 (control) become special added tokens, 4 (user defined)
// non-special added tokens, 5 (unused padding) are left out; bos/eos/unknown ids, add_bos_token,
// add_space_prefix and the chat template carry over.
//
// Errors name the file and the key (a missing or mistyped key, an array
// whose length disagrees with the tokens, an unknown model or pre name).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "common/base/status.h"
#include "common/model/gguf/gguf_file.h"
#include "common/model/gguf/gguf_writer.h"

namespace dancemoe::gguf {

struct TokenizerTexts {
  std::string tokenizer_json;
  std::string tokenizer_config_json;
};

// not_found when the file has no tokenizer.ggml.model.
Result<TokenizerTexts> tokenizer_from_gguf(const File& file, std::string_view file_name);

// Writes the tokenizer.ggml.* keys for a tokenizer.json of either kind above.
// Ids the tokenizer leaves unused below `vocab_size` (models pad their
// embedding) become "[PADn]" tokens of type unused, as llama.cpp's converter
// writes them: llama.cpp wants one token per embedding row. invalid_argument
// when the pipeline is not one GGUF can describe.
Status tokenizer_to_gguf(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                         std::string_view source_name, int64_t vocab_size, GgufWriter* writer);

}  // namespace dancemoe::gguf
