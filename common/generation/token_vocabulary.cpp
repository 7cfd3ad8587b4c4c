#include "common/generation/token_vocabulary.h"

#include <algorithm>

namespace dancemoe {

std::shared_ptr<const TokenVocabulary> TokenVocabulary::build(const tokenizer::Tokenizer& tokenizer,
                                                              int32_t n_ids) {
  auto v = std::make_shared<TokenVocabulary>();
  v->n_ids = n_ids;
  v->bytes.resize(static_cast<size_t>(n_ids));
  for (int32_t id = 0; id < n_ids; ++id) {
    if (std::optional<std::string> b = tokenizer.token_bytes(id)) {
      v->bytes[static_cast<size_t>(id)] = std::move(*b);
    }
    if (!v->bytes[static_cast<size_t>(id)].empty()) v->sorted_ids.push_back(id);
  }
  std::sort(v->sorted_ids.begin(), v->sorted_ids.end(), [&](int32_t a, int32_t b) {
    return v->bytes[static_cast<size_t>(a)] < v->bytes[static_cast<size_t>(b)];
  });
  v->shared.resize(v->sorted_ids.size());
  for (size_t i = 0; i < v->sorted_ids.size(); ++i) {
    const std::string& b = v->bytes[static_cast<size_t>(v->sorted_ids[i])];
    v->max_token_bytes = std::max(v->max_token_bytes, b.size());
    if (i == 0) continue;
    const std::string& a = v->bytes[static_cast<size_t>(v->sorted_ids[i - 1])];
    const auto mismatch = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    v->shared[i] = static_cast<uint32_t>(mismatch.first - a.begin());
  }
  return v;
}

}  // namespace dancemoe
