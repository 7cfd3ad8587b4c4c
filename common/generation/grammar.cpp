#include "common/generation/grammar.h"

#include <string>

namespace dancemoe {

GrammarBuilder::GrammarBuilder(size_t max_elements) : max_elements_(max_elements) {}

uint32_t GrammarBuilder::declare() {
  rules_.emplace_back();
  defined_.push_back(false);
  return static_cast<uint32_t>(rules_.size() - 1);
}

void GrammarBuilder::define(uint32_t rule, std::vector<Sequence> alternatives) {
  for (const Sequence& s : alternatives) n_items_ += s.size() + 1;
  defined_[rule] = true;
  if (over_budget()) return;  // finish() fails; keep memory bounded until then
  rules_[rule] = std::move(alternatives);
}

uint32_t GrammarBuilder::rule(std::vector<Sequence> alternatives) {
  const uint32_t r = declare();
  define(r, std::move(alternatives));
  return r;
}

GrammarBuilder::Item GrammarBuilder::bytes(const ByteSet& set) {
  // Byte sets repeat a lot (one per literal character): share them.
  const auto [it, added] = set_index_.try_emplace(set, static_cast<uint32_t>(byte_sets_.size()));
  if (added) byte_sets_.push_back(set);
  return Item{false, it->second};
}

GrammarBuilder::Item GrammarBuilder::byte_range(uint8_t lo, uint8_t hi) {
  ByteSet set;
  for (int b = lo; b <= hi; ++b) set.set(static_cast<size_t>(b));
  return bytes(set);
}

void GrammarBuilder::append_literal(Sequence& sequence, std::string_view text) {
  for (char c : text) {
    const auto b = static_cast<uint8_t>(c);
    sequence.push_back(byte_range(b, b));
  }
}

GrammarBuilder::Sequence GrammarBuilder::literal(std::string_view text) {
  Sequence s;
  append_literal(s, text);
  return s;
}

Result<Grammar> GrammarBuilder::finish(uint32_t root) {
  if (n_items_ > max_elements_) {
    return resource_exhausted("the grammar has " + std::to_string(n_items_) +
                              " elements, over the limit of " + std::to_string(max_elements_));
  }
  Grammar g;
  g.byte_sets = byte_sets_;
  g.root = root;
  g.alternatives.resize(rules_.size());
  g.elements.reserve(n_items_);
  for (size_t r = 0; r < rules_.size(); ++r) {
    if (!defined_[r]) return internal_error("grammar rule " + std::to_string(r) + " is undefined");
    for (const Sequence& s : rules_[r]) {
      g.alternatives[r].push_back(static_cast<uint32_t>(g.elements.size()));
      for (const Item& item : s) {
        g.elements.push_back(
            {item.is_rule ? GrammarElement::Kind::kRule : GrammarElement::Kind::kBytes,
             item.index});
      }
      g.elements.push_back({GrammarElement::Kind::kEnd, 0});
    }
  }
  return g;
}

}  // namespace dancemoe
