// PostProcessor: the "post_processor" section of a tokenizer.json, which
// decides what encode(add_special_tokens=true) adds around a single sequence
// (e.g. Llama's <s>).
//
// Supported types: TemplateProcessing (its "single" template: SpecialToken
// items and the sequence "A"; the "pair" template is not used since we never
// encode pairs), ByteLevel (only adjusts offsets in HF: adds nothing), and
// Sequence of these. Others are a load error naming the JSON path.
//
// Immutable after parse; process() is const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {
class JsonField;
}  // namespace dancemoe

namespace dancemoe::tokenizer {

class PostProcessor {
 public:
  // Parses a non-null "post_processor" node.
  static Result<std::unique_ptr<PostProcessor>> parse(const JsonField& field);

  // The ids of one encoded sequence with the template's special tokens.
  std::vector<int32_t> process(std::vector<int32_t> ids) const;

  // Every id the template can add (to check them against the vocabulary).
  std::vector<int32_t> special_ids() const;

 private:
  // One item of the single-sequence template: the sequence itself (empty
  // ids, is_sequence) or the ids of a special token.
  struct Item {
    bool is_sequence;
    std::vector<int32_t> ids;
  };

  static Status parse_into(const JsonField& field, std::vector<Item>& items, bool& has_template);
  static Status parse_template(const JsonField& field, std::vector<Item>& items);

  // Empty with has_template_ false: the sequence is returned unchanged.
  std::vector<Item> items_;
  bool has_template_ = false;
};

}  // namespace dancemoe::tokenizer
