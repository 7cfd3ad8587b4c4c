// Grammar: a context-free grammar over bytes, the form constrained decoding
// runs on (json_schema_grammar.h builds one from a JSON schema;
// grammar_matcher.h follows it byte by byte).
//
// Rules are lists of alternatives; an alternative is a sequence of items,
// each a set of bytes (one byte of the output) or a reference to a rule. An
// empty alternative matches nothing (the rule is optional). Rules must not
// be left-recursive and no rule may derive itself without consuming a byte:
// the builder's users (the schema converter) only make right recursion.
//
// Flat layout for the matcher: `elements` holds every alternative as a run
// of items ended by kEnd; rule r's alternatives start at
// elements[alternatives[r][i]].
//
// Built once per request; immutable afterwards and safe to share.
#pragma once

#include <bitset>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

using ByteSet = std::bitset<256>;

struct GrammarElement {
  enum class Kind : uint8_t { kBytes, kRule, kEnd };
  Kind kind = Kind::kEnd;
  uint32_t index = 0;  // kBytes: into Grammar::byte_sets; kRule: the rule
};

struct Grammar {
  std::vector<GrammarElement> elements;
  std::vector<std::vector<uint32_t>> alternatives;  // per rule: start offsets into elements
  std::vector<ByteSet> byte_sets;
  uint32_t root = 0;
};

// Builds a Grammar. Rules may be declared first and defined later (for
// recursive schemas); every declared rule must be defined before finish().
class GrammarBuilder {
 public:
  struct Item {
    bool is_rule = false;
    uint32_t index = 0;  // a byte set or a rule
  };
  using Sequence = std::vector<Item>;

  // The limits keep a hostile schema from taking unbounded memory: past
  // them, finish() fails (resource_exhausted naming the limit).
  explicit GrammarBuilder(size_t max_elements = 1 << 20);

  uint32_t declare();
  void define(uint32_t rule, std::vector<Sequence> alternatives);
  uint32_t rule(std::vector<Sequence> alternatives);

  Item bytes(const ByteSet& set);
  Item byte_range(uint8_t lo, uint8_t hi);
  Item ref(uint32_t rule) const { return Item{true, rule}; }
  // The exact bytes of `text`, appended to `sequence`.
  void append_literal(Sequence& sequence, std::string_view text);
  Sequence literal(std::string_view text);

  // Past max_elements: what is defined from now on is dropped, and finish()
  // fails. Builders of large grammars check it to stop early.
  bool over_budget() const { return n_items_ > max_elements_; }

  // The grammar with `root` as its start rule.
  Result<Grammar> finish(uint32_t root);

 private:
  std::vector<std::vector<Sequence>> rules_;
  std::vector<bool> defined_;
  std::vector<ByteSet> byte_sets_;
  std::unordered_map<ByteSet, uint32_t> set_index_;
  size_t n_items_ = 0;
  size_t max_elements_;
};

}  // namespace dancemoe
