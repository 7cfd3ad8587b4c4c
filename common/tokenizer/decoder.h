// Decoder: the "decoder" section of a tokenizer.json, turning the token
// strings of an id sequence back into text. Steps run in order over the list
// of token strings (a Sequence is flattened), then the list is concatenated:
//
//   ByteLevel     byte-level alphabet -> bytes -> UTF-8 (lossy)
//   Replace       pattern (String|Regex) -> content, in each token
//   ByteFallback  runs of <0xNN> tokens -> the bytes they spell (lossy)
//   Fuse          all tokens -> one
//   Strip         up to `start` leading / `stop` trailing `content` chars
//                 removed from each token
//
// Invalid UTF-8 produced by ByteLevel or ByteFallback becomes U+FFFD per
// maximal ill-formed subpart (utf8.h). For ByteLevel this is what HF does
// (from_utf8_lossy); for ByteFallback HF emits one U+FFFD per byte of an
// invalid run. We follow the lossy rule there too (as the JS port does): it
// keeps decoding prefix-stable, which the incremental decoder relies on, and
// only differs on sequences that are not valid text anyway.
//
// Immutable after parse; decode() is const and thread-safe.
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

class Decoder {
 public:
  // Parses a non-null "decoder" node.
  static Result<std::unique_ptr<Decoder>> parse(const JsonField& field);

  // Runs the steps over `tokens` and concatenates the result.
  std::string decode(std::vector<std::string> tokens) const;
  // The raw bytes one token adds in the middle of a text (constrained
  // decoding): the steps without UTF-8 repair (a token may end inside a
  // character), and without a Strip that follows a Fuse (that strips the
  // start of the whole text only).
  std::string token_bytes(std::string token) const;

 private:
  enum class Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip };
  struct Step {
    Kind kind;
    std::optional<Regex> pattern;  // Replace
    std::string content;           // Replace: replacement; Strip: the char (UTF-8)
    size_t start = 0;              // Strip
    size_t stop = 0;               // Strip
  };

  static Status parse_into(const JsonField& field, std::vector<Step>& steps);
  static void apply(const Step& step, std::vector<std::string>& tokens);

  std::vector<Step> steps_;
};

}  // namespace dancemoe::tokenizer
