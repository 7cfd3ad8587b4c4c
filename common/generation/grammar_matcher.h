// GrammarMatcher: follows a Grammar (grammar.h) one byte at a time, for
// constrained decoding (token_constraint.h).
//
// A position in the grammar is a stack of frames (the rule alternatives
// entered and where each one is); because the grammar may be ambiguous, the
// matcher's state is the set of stacks still possible -- the classic
// pushdown recogniser that llama.cpp's grammars also use. Stacks are
// interned as linked nodes (position, parent), so a stack is one integer,
// equal stacks are equal integers, and a frame that ends the alternative it
// is in is popped before its child is pushed (right recursion -- how the
// schema converter writes repetition -- keeps stacks short). States (sets of
// stacks) are interned too, and advance(state, byte) is memoised, so walking
// the tokenizer's vocabulary again from a state seen before costs lookups.
//
// Bounds (GrammarMatcherLimits): a stack deeper than max_stack_depth is dropped (nesting
// that deep is refused), a state with more than max_stacks stacks or an
// expansion doing more than max_expansion_steps steps sets overflowed() and
// rejects (the schema is too ambiguous to follow); memory_entries() lets the
// owner compact() when the tables grow past its budget.
//
// Not thread-safe: one matcher per generation.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/generation/grammar.h"

namespace dancemoe {

struct GrammarMatcherLimits {
  uint32_t max_stack_depth = 512;
  size_t max_stacks = 1024;
  size_t max_expansion_steps = 1 << 16;
};

class GrammarMatcher {
 public:
  using StateId = uint32_t;
  static constexpr StateId kRejected = 0;  // no stack left: the bytes do not fit

  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar, GrammarMatcherLimits limits = {});

  // Before any byte.
  StateId initial();
  StateId advance(StateId state, uint8_t byte);
  // The bytes so far are a whole sentence of the grammar.
  bool accepting(StateId state) const;
  // Some continuation with more bytes exists.
  bool can_continue(StateId state) const;
  bool overflowed() const { return overflowed_; }

  // Interned nodes, states and memoised steps held now.
  size_t memory_entries() const;
  // Forgets everything but `keep` (whose new id it returns).
  StateId compact(StateId keep);

 private:
  struct Node {
    uint32_t pos = 0;     // next element of this frame
    uint32_t parent = 0;  // the frame below; 0: the bottom (empty stack)
    uint32_t depth = 0;
  };

  void reset_tables();
  uint32_t node(uint32_t pos, uint32_t parent);
  // Appends the stacks `stack` stands for whose top is a byte set (or the
  // empty stack, 0) to `out`.
  void expand(uint32_t stack, std::vector<uint32_t>& out, size_t& steps, uint32_t recursion);
  StateId state(std::vector<uint32_t> stacks);

  std::shared_ptr<const Grammar> grammar_;
  GrammarMatcherLimits limits_;
  bool overflowed_ = false;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_index_;
  std::vector<std::vector<uint32_t>> states_;
  std::unordered_multimap<uint64_t, StateId> state_index_;  // by a hash of the stacks
  std::unordered_map<uint64_t, StateId> advance_memo_;      // state << 8 | byte
};

}  // namespace dancemoe
