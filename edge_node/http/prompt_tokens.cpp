#include "edge_node/http/prompt_tokens.h"

#include <algorithm>

namespace dancemoe::node {
namespace {

// Bytes per token below which a text surely fits when tokenized whole.
constexpr size_t kBytesPerToken = 4;

// A cut at or before `at` that does not split a UTF-8 character, at the
// last whitespace of the 256 bytes before it when there is one.
size_t cut_before(const std::string& text, size_t at) {
  at = std::min(at, text.size());
  for (size_t i = at; i > 0 && at - i < 256; --i) {
    const char c = text[i - 1];
    if (c == ' ' || c == '\n' || c == '\t') return i;
  }
  while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xc0) == 0x80) --at;
  return at;
}

}  // namespace

Result<PromptTokens> tokenize_within(const std::string& text, size_t limit,
                                     const Tokenize& tokenize) {
  size_t prefix = (limit + kCutMargin) * kBytesPerToken;
  while (prefix < text.size()) {
    const size_t cut = cut_before(text, prefix);
    DMOE_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenize(text.substr(0, cut)));
    if (ids.size() > limit + kCutMargin) {
      PromptTokens out;
      out.complete = false;
      out.at_least = ids.size() - kCutMargin;
      return out;
    }
    prefix *= 2;
  }
  PromptTokens out;
  DMOE_ASSIGN_OR_RETURN(out.ids, tokenize(text));
  out.complete = out.ids.size() <= limit;
  out.at_least = out.ids.size();
  return out;
}

}  // namespace dancemoe::node
