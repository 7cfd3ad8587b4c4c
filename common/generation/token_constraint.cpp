#include "common/generation/token_constraint.h"

#include <algorithm>
#include <limits>

namespace dancemoe {

Result<std::unique_ptr<TokenConstraint>> TokenConstraint::create(
    std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
    std::vector<int32_t> eos_ids) {
  std::unique_ptr<TokenConstraint> c(
      new TokenConstraint(std::move(grammar), std::move(vocabulary), std::move(eos_ids)));
  c->state_ = c->matcher_.initial();
  if (c->state_ == GrammarMatcher::kRejected) {
    return invalid_argument(c->matcher_.overflowed() ? "the schema is too ambiguous to follow"
                                                     : "the schema admits no value");
  }
  return c;
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const TokenVocabulary> vocabulary,
                                 std::vector<int32_t> eos_ids)
    : vocabulary_(std::move(vocabulary)),
      eos_ids_(std::move(eos_ids)),
      matcher_(std::move(grammar)) {}

bool TokenConstraint::is_eos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

GrammarMatcher::StateId TokenConstraint::walk(GrammarMatcher::StateId from,
                                              const std::string& bytes) {
  for (char c : bytes) {
    from = matcher_.advance(from, static_cast<uint8_t>(c));
    if (from == GrammarMatcher::kRejected) break;
  }
  return from;
}

bool TokenConstraint::allows(int32_t id) {
  if (is_eos(id)) return complete();
  if (id < 0 || id >= vocabulary_->n_ids) return false;
  const std::string& bytes = vocabulary_->bytes[static_cast<size_t>(id)];
  return !bytes.empty() && walk(state_, bytes) != GrammarMatcher::kRejected;
}

const std::vector<uint64_t>& TokenConstraint::allowed_bits() {
  if (const auto it = masks_.find(state_); it != masks_.end()) return it->second;
  if (masks_.size() >= kMaxCachedMasks) masks_.clear();
  const TokenVocabulary& v = *vocabulary_;
  std::vector<uint64_t> bits((static_cast<size_t>(v.n_ids) + 63) / 64, 0);
  walk_states_.assign(v.max_token_bytes + 1, GrammarMatcher::kRejected);
  walk_states_[0] = state_;
  // The prefix length from which the previous token's path was rejected:
  // a token sharing at least that much of it is rejected too.
  size_t dead_from = std::numeric_limits<size_t>::max();
  for (size_t i = 0; i < v.sorted_ids.size(); ++i) {
    const int32_t id = v.sorted_ids[i];
    const std::string& bytes = v.bytes[static_cast<size_t>(id)];
    const size_t shared = i == 0 ? 0 : v.shared[i];
    if (shared >= dead_from) continue;
    dead_from = std::numeric_limits<size_t>::max();
    GrammarMatcher::StateId s = walk_states_[shared];
    size_t depth = shared;
    for (; depth < bytes.size(); ++depth) {
      s = matcher_.advance(s, static_cast<uint8_t>(bytes[depth]));
      walk_states_[depth + 1] = s;
      if (s == GrammarMatcher::kRejected) {
        dead_from = depth + 1;
        break;
      }
    }
    if (s != GrammarMatcher::kRejected) bits[static_cast<size_t>(id) / 64] |= 1ull << (id % 64);
  }
  if (complete()) {
    for (int32_t id : eos_ids_) {
      if (id >= 0 && id < v.n_ids) bits[static_cast<size_t>(id) / 64] |= 1ull << (id % 64);
    }
  }
  return masks_.emplace(state_, std::move(bits)).first->second;
}

bool TokenConstraint::mask(std::span<float> logits) {
  const std::vector<uint64_t>& bits = allowed_bits();
  bool any = false;
  for (size_t id = 0; id < logits.size(); ++id) {
    const bool allowed = id / 64 < bits.size() && ((bits[id / 64] >> (id % 64)) & 1u);
    if (!allowed) logits[id] = -std::numeric_limits<float>::infinity();
    any = any || allowed;
  }
  return any && !matcher_.overflowed();
}

void TokenConstraint::accept(int32_t id) {
  if (is_eos(id) || id < 0 || id >= vocabulary_->n_ids) return;
  state_ = walk(state_, vocabulary_->bytes[static_cast<size_t>(id)]);
  if (matcher_.memory_entries() > kMaxMatcherEntries) {
    state_ = matcher_.compact(state_);
    masks_.clear();
  }
}

bool TokenConstraint::complete() const { return matcher_.accepting(state_); }

bool TokenConstraint::finished() const {
  return matcher_.accepting(state_) && !matcher_.can_continue(state_);
}

}  // namespace dancemoe
