// Regex: a compiled PCRE2 pattern in UTF + UCP mode (Unicode properties such
// as \p{L}, and \s, \w, \d by Unicode rules), used for the tokenizer.json
// "Regex" patterns of Split pre-tokenizers and Replace normalizers/decoders.
// HF tokenizers compiles these with Oniguruma; PCRE2 accepts the same syntax
// for the patterns in use (classes, look-ahead, (?i:...) groups).
//
// Known differences from Oniguruma (both from Unicode data, not syntax):
// PCRE2 10.42 follows Unicode 14 (Oniguruma 6.9.8: Unicode 15), so letters
// first assigned in Unicode 15 are not \p{L} here; and PCRE2 counts U+180E
// as \s, Oniguruma does not.
//
// Owns the compiled code (RAII). Matching is const and thread-safe: every
// call allocates its own match data, the compiled code is shared read-only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {
class JsonField;
}  // namespace dancemoe

namespace dancemoe::tokenizer {

struct RegexMatch {
  size_t begin;  // byte offsets into the subject
  size_t end;
};

class Regex {
 public:
  // Compiles `pattern`; the error names the pattern and PCRE2's message and
  // offset (the caller adds the file and JSON path).
  static Result<Regex> compile(std::string_view pattern);
  // A pattern that matches `literal` exactly.
  static Result<Regex> literal(std::string_view literal);

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // All non-overlapping matches, left to right, like Oniguruma's find_iter:
  // after an empty match the search resumes one code point further.
  // `subject` must be valid UTF-8. Errors only when PCRE2 gives up (match or
  // memory limit on a pathological input), never by crashing.
  Result<std::vector<RegexMatch>> find_all(std::string_view subject) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  Regex(std::string pattern, std::unique_ptr<Code> code);

  std::string pattern_;
  std::unique_ptr<Code> code_;
};

// Parses a tokenizer.json pattern object, {"String": "..."} (a literal) or
// {"Regex": "..."}, with errors naming the JSON path.
Result<Regex> parse_pattern(const JsonField& field);

}  // namespace dancemoe::tokenizer
