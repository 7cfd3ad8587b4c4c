// IncrementalDecoder: streaming detokenization for generation. push() takes
// one generated id and returns the text that became final with it; the
// concatenation of all push() results and flush() equals
// Tokenizer::decode(all ids) for valid text and prefix-stable decoders (all
// supported ones: decoding more tokens only appends, except that a trailing
// incomplete character, shown as U+FFFD, can become a real character).
//
// A token can end in the middle of a UTF-8 character (byte-level BPE splits
// emoji and CJK characters across tokens; <0xNN> byte-fallback tokens carry
// one byte each), and some decoders depend on context (Llama's Strip removes
// the first space of the whole text only). So push() re-decodes a short
// window, the tokens of the previous emission (context) plus the pending
// ones, and emits the new text except a trailing run of U+FFFD, which may
// still be an incomplete character. Every piece is valid UTF-8 and never
// splits a character; a genuinely invalid byte run is released as U+FFFD
// once text follows it, or at flush(). The window is bounded: it moves on
// after kMaxPendingTokens pending tokens even if the tail is incomplete.
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
  // A UTF-8 character spans at most 4 non-empty tokens; after this many
  // pending tokens the window moves on even if its tail is incomplete.
  static constexpr size_t kMaxPendingTokens = 8;
  // Bound on pending tokens that add no text: beyond it, ids that decode()
  // skips are dropped, and if that is not enough the window moves on.
  static constexpr size_t kMaxWindowTokens = 64;

  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = true);

  // Text that became final with `id` (may be empty).
  std::string push(int32_t id);
  // Whatever is still pending; the decoder is then empty and can be reused.
  std::string flush();

 private:
  void drop_invisible_pending();

  const Tokenizer* tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> window_;  // context tokens, then pending tokens
  size_t n_context_ = 0;         // leading tokens of window_ already emitted
  size_t n_emitted_bytes_ = 0;   // bytes of decode(window_) already returned
};

}  // namespace dancemoe::tokenizer
