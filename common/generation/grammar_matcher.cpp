#include "common/generation/grammar_matcher.h"

#include <algorithm>

namespace dancemoe {
namespace {

uint64_t hash_stacks(const std::vector<uint32_t>& stacks) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids
  for (uint32_t s : stacks) {
    h ^= s;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, GrammarMatcherLimits limits)
    : grammar_(std::move(grammar)), limits_(limits) {
  reset_tables();
}

void GrammarMatcher::reset_tables() {
  nodes_.assign(1, Node{});  // node 0: the empty stack
  node_index_.clear();
  states_.assign(1, {});  // state 0: rejected
  state_index_.clear();
  advance_memo_.clear();
}

uint32_t GrammarMatcher::node(uint32_t pos, uint32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(pos) << 32) | parent;
  const auto [it, added] = node_index_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (added) nodes_.push_back({pos, parent, nodes_[parent].depth + 1});
  return it->second;
}

void GrammarMatcher::expand(uint32_t stack, std::vector<uint32_t>& out, size_t& steps,
                            uint32_t recursion) {
  // A rule that derives itself without a byte (a schema whose $ref points
  // back at itself) would recurse forever: both bounds stop it.
  if (++steps > limits_.max_expansion_steps || recursion > 2 * limits_.max_stack_depth + 64) {
    overflowed_ = true;
    return;
  }
  if (stack == 0) {
    out.push_back(0);
    return;
  }
  const Node n = nodes_[stack];
  const GrammarElement& e = grammar_->elements[n.pos];
  switch (e.kind) {
    case GrammarElement::Kind::kBytes:
      out.push_back(stack);
      return;
    case GrammarElement::Kind::kEnd:
      expand(n.parent, out, steps, recursion + 1);  // this frame is done: the one below goes on
      return;
    case GrammarElement::Kind::kRule: {
      // Where to go on after the rule: the rest of this frame, or (when the
      // rule is its last item) straight to the frame below.
      const bool last = grammar_->elements[n.pos + 1].kind == GrammarElement::Kind::kEnd;
      const uint32_t after = last ? n.parent : node(n.pos + 1, n.parent);
      if (nodes_[after].depth + 1 > limits_.max_stack_depth) return;  // nested too deep
      for (uint32_t start : grammar_->alternatives[e.index]) {
        expand(node(start, after), out, steps, recursion + 1);
        if (overflowed_) return;
      }
      return;
    }
  }
}

GrammarMatcher::StateId GrammarMatcher::state(std::vector<uint32_t> stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty()) return kRejected;
  if (stacks.size() > limits_.max_stacks) {
    overflowed_ = true;
    return kRejected;
  }
  const uint64_t h = hash_stacks(stacks);
  const auto [first, last] = state_index_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    if (states_[it->second] == stacks) return it->second;
  }
  states_.push_back(std::move(stacks));
  const auto id = static_cast<StateId>(states_.size() - 1);
  state_index_.emplace(h, id);
  return id;
}

GrammarMatcher::StateId GrammarMatcher::initial() {
  std::vector<uint32_t> stacks;
  size_t steps = 0;
  for (uint32_t start : grammar_->alternatives[grammar_->root]) {
    expand(node(start, 0), stacks, steps, 0);
  }
  return overflowed_ ? kRejected : state(std::move(stacks));
}

GrammarMatcher::StateId GrammarMatcher::advance(StateId from, uint8_t byte) {
  if (from == kRejected) return kRejected;
  const uint64_t key = (static_cast<uint64_t>(from) << 8) | byte;
  if (const auto it = advance_memo_.find(key); it != advance_memo_.end()) return it->second;
  std::vector<uint32_t> stacks;
  size_t steps = 0;
  const std::vector<uint32_t>& current = states_[from];  // expand() grows nodes_ only
  for (uint32_t stack : current) {
    if (stack == 0) continue;  // complete: no byte may follow on this stack
    const Node n = nodes_[stack];
    const GrammarElement& e = grammar_->elements[n.pos];
    if (!grammar_->byte_sets[e.index].test(byte)) continue;
    expand(node(n.pos + 1, n.parent), stacks, steps, 0);
    if (overflowed_) break;
  }
  const StateId to = overflowed_ ? kRejected : state(std::move(stacks));
  advance_memo_.emplace(key, to);
  return to;
}

bool GrammarMatcher::accepting(StateId s) const {
  return s != kRejected && states_[s].front() == 0;  // sorted: the empty stack comes first
}

bool GrammarMatcher::can_continue(StateId s) const {
  return s != kRejected && states_[s].back() != 0;
}

size_t GrammarMatcher::memory_entries() const {
  return nodes_.size() + states_.size() + advance_memo_.size();
}

GrammarMatcher::StateId GrammarMatcher::compact(StateId keep) {
  // Each stack of `keep` as its frames' positions, bottom first.
  std::vector<std::vector<uint32_t>> chains;
  for (uint32_t stack : states_[keep]) {
    std::vector<uint32_t> chain;
    for (uint32_t s = stack; s != 0; s = nodes_[s].parent) chain.push_back(nodes_[s].pos);
    std::reverse(chain.begin(), chain.end());
    chains.push_back(std::move(chain));
  }
  reset_tables();
  std::vector<uint32_t> stacks;
  for (const auto& chain : chains) {
    uint32_t s = 0;
    for (uint32_t pos : chain) s = node(pos, s);
    stacks.push_back(s);
  }
  return state(std::move(stacks));
}

}  // namespace dancemoe
