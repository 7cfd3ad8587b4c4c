// PreTokenizer: the "pre_tokenizer" section of a tokenizer.json. It cuts a
// normalised section of text into "words" that the BPE model encodes one by
// one; a Sequence is flattened into steps, each applied to every piece the
// previous step produced (as HF's PreTokenizedString::split does).
//
// Supported types:
//   Split      pattern String|Regex, behavior Removed | Isolated |
//              MergedWithPrevious | MergedWithNext | Contiguous, invert
//   ByteLevel  add_prefix_space, use_regex (the GPT-2 regex); maps every
//              byte to the byte-level alphabet (byte_level.h)
//   Sequence
// Others are a load error naming the JSON path.
//
// Immutable after parse; pre_tokenize() is const and thread-safe.
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

class PreTokenizer {
 public:
  // Parses a non-null "pre_tokenizer" node.
  static Result<std::unique_ptr<PreTokenizer>> parse(const JsonField& field);

  // Splits `text` (valid UTF-8) into non-empty words, appended to `words`.
  Status pre_tokenize(std::string_view text, std::vector<std::string>& words) const;

 private:
  enum class Kind { kSplit, kByteLevel };
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
  struct Step {
    Kind kind;
    std::optional<Regex> pattern;  // Split: the pattern; ByteLevel: the GPT-2 regex if use_regex
    Behavior behavior = Behavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;  // ByteLevel
  };

  static Status parse_into(const JsonField& field, std::vector<Step>& steps);
  static Status apply(const Step& step, const std::string& piece, std::vector<std::string>& out);

  std::vector<Step> steps_;
};

}  // namespace dancemoe::tokenizer
