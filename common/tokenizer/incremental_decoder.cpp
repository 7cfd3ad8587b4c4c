#include "common/tokenizer/incremental_decoder.h"

#include <algorithm>

#include "common/tokenizer/utf8.h"

namespace dancemoe::tokenizer {
namespace {

// Length of `text` without its trailing run of U+FFFD.
size_t stable_length(const std::string& text) {
  size_t end = text.size();
  while (utf8_ends_with_replacement(std::string_view(text).substr(0, end))) end -= 3;
  return end;
}

}  // namespace

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer), skip_special_tokens_(skip_special_tokens) {}

std::string IncrementalDecoder::push(int32_t id) {
  window_.push_back(id);
  const std::string text = tokenizer_->decode(window_, skip_special_tokens_);
  const size_t stable = stable_length(text);
  std::string out;
  // Decoders are prefix-stable, so text[0, n_emitted_bytes_) is what was
  // already returned; what follows up to the trailing U+FFFD run is final.
  if (stable > n_emitted_bytes_) {
    out = text.substr(n_emitted_bytes_, stable - n_emitted_bytes_);
    n_emitted_bytes_ = stable;
  }
  if (window_.size() - n_context_ >= kMaxWindowTokens && out.empty()) drop_invisible_pending();
  const size_t n_pending = window_.size() - n_context_;
  const bool complete = stable == text.size();
  if ((!out.empty() && (complete || n_pending >= kMaxPendingTokens)) ||
      n_pending >= kMaxWindowTokens) {
    // The pending tokens become the context of the next window; everything
    // but their trailing U+FFFD run has been returned.
    window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(n_context_));
    n_context_ = window_.size();
    n_emitted_bytes_ = stable_length(tokenizer_->decode(window_, skip_special_tokens_));
  }
  return out;
}

void IncrementalDecoder::drop_invisible_pending() {
  // Ids that decode() skips (unknown ids, special tokens when skipping) add
  // nothing to any decoding, so dropping them keeps the context that gives
  // the next tokens their meaning (e.g. whether a leading space is stripped).
  auto invisible = [this](int32_t id) {
    return !tokenizer_->token_text(id) || (skip_special_tokens_ && tokenizer_->is_special(id));
  };
  window_.erase(std::remove_if(window_.begin() + static_cast<std::ptrdiff_t>(n_context_),
                               window_.end(), invisible),
                window_.end());
}

std::string IncrementalDecoder::flush() {
  std::string out;
  const std::string text = tokenizer_->decode(window_, skip_special_tokens_);
  if (text.size() > n_emitted_bytes_) out = text.substr(n_emitted_bytes_);
  window_.clear();
  n_context_ = 0;
  n_emitted_bytes_ = 0;
  return out;
}

}  // namespace dancemoe::tokenizer
