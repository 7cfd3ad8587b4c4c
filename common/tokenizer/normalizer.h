// Normalizer: the "normalizer" section of a tokenizer.json, as a flat list of
// steps applied in order (a Sequence is flattened at load).
//
// Supported types: NFC, NFD, NFKC, NFKD (utf8proc), Prepend, Replace (String
// or Regex pattern), Sequence. Anything else is a load error naming the JSON
// path. Semantics follow HF tokenizers (Rust), e.g. Prepend adds nothing to
// an empty string.
//
// Immutable after parse; normalize() is const and thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/status.h"
#include "common/tokenizer/regex.h"

namespace dancemoe {
class JsonField;
}  // namespace dancemoe

namespace dancemoe::tokenizer {

class Normalizer {
 public:
  // Parses a non-null "normalizer" node.
  static Result<std::unique_ptr<Normalizer>> parse(const JsonField& field);

  // Normalises `text` (valid UTF-8) in place. Errors only if a Regex step
  // hits PCRE2's limits.
  Status normalize(std::string& text) const;

 private:
  enum class Kind { kNfc, kNfd, kNfkc, kNfkd, kPrepend, kReplace };
  struct Step {
    Kind kind;
    std::string content;           // Prepend: the prefix; Replace: the replacement
    std::optional<Regex> pattern;  // Replace only
  };

  static Status parse_into(const JsonField& field, std::vector<Step>& steps);

  std::vector<Step> steps_;
};

// Unicode normalisation forms via utf8proc; `text` must be valid UTF-8.
enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };
std::string unicode_normalize(std::string_view text, UnicodeForm form);

// Replaces every match of `pattern` in `text` with `content`.
Result<std::string> replace_all(const Regex& pattern, std::string_view text,
                                std::string_view content);

}  // namespace dancemoe::tokenizer
