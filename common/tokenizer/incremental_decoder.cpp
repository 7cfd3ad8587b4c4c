#include "common/tokenizer/incremental_decoder.h"

#include <algorithm>

#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string IncrementalDecoder::push(int32_t id) {
  window_.push_back(id);
  const std::string text = tokenizer_->decode(window_, skip_special_tokens_);
  const size_t n_pending = window_.size() - n_context_;
  const bool grew = text.size() > context_text_.size();
  const bool complete = !utf8_ends_with_replacement(text);
  if (!(grew && (complete || n_pending >= kMaxPendingTokens))) return {};

  // Every supported decoder is prefix-stable (decoding more tokens only
  // appends), so the new text is what follows the context's own decoding.
  // Should a decoder ever rewrite the context, the overlap is not repeated.
  const bool extends_context = text.compare(0, context_text_.size(), context_text_) == 0;
  std::string out = text.substr(extends_context ? context_text_.size()
                                                : std::min(context_text_.size(), text.size()));
  // The tokens just emitted become the context of the next window.
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(n_context_));
  n_context_ = window_.size();
  context_text_ = tokenizer_->decode(window_, skip_special_tokens_);
  return out;
}

std::string IncrementalDecoder::flush() {
  std::string out;
  if (window_.size() > n_context_) {
    const std::string text = tokenizer_->decode(window_, skip_special_tokens_);
    if (text.size() > context_text_.size()) out = text.substr(context_text_.size());
  }
  window_.clear();
  n_context_ = 0;
  context_text_.clear();
  return out;
}

}  // namespace dancemoe::tokenizer
