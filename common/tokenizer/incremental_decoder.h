// IncrementalDecoder: streaming detokenization for generation. push() takes
// one generated id and returns the text that became final with it; the
// concatenation of all push() results and flush() equals
// Tokenizer::decode(all ids) for the supported decoders.
//
// A token can end in the middle of a UTF-8 character (byte-level BPE splits
// emoji and CJK characters across tokens; <0xNN> byte-fallback tokens carry
// one byte each), and some decoders depend on context (Llama's Strip removes
// the first space of the text only). So push() re-decodes a short window:
// the tokens of the previous emission (context) plus the pending ones, and
// emits the new text only when it does not end in U+FFFD, i.e. is not an
// incomplete character. The output is therefore always valid UTF-8 and never
// splits a character; a genuinely invalid byte run is released as U+FFFD
// once later text follows it, after kMaxPendingTokens tokens, or at flush().
//
// Borrows the Tokenizer (must outlive this). Not thread-safe: one decoder per
// generation stream.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace dancemoe::tokenizer {

class IncrementalDecoder {
 public:
  // A UTF-8 character spans at most 4 byte tokens; beyond this many pending
  // tokens the text is released even if it ends in U+FFFD.
  static constexpr size_t kMaxPendingTokens = 8;

  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = true);

  // Text that became final with `id` (may be empty).
  std::string push(int32_t id);
  // Whatever is still pending; the decoder is then empty and can be reused.
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> window_;  // context tokens, then pending tokens
  size_t n_context_ = 0;         // leading tokens of window_ already emitted
  std::string context_text_;     // decode of the context tokens alone
};

}  // namespace dancemoe::tokenizer
