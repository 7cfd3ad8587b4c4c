// JsonField: a read-only view of one node of a parsed tokenizer.json (or
// tokenizer_config.json) that knows its JSON path, so that every load error
// names the file, the path and the offending value, e.g.
//   "qwen/tokenizer.json: pre_tokenizer.pretokenizers[1].type: unsupported
//    value \"Whitespace\" (supported: ByteLevel, Sequence, Split)".
//
// Internal to common/tokenizer (it exposes nlohmann::json). A JsonField
// borrows the document and the source name; both must outlive it. Values are
// plain views: thread-safe to read concurrently.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/status.h"

namespace dancemoe::tokenizer {

class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string path, const std::string& source)
      : value_(&value), path_(std::move(path)), source_(&source) {}

  const nlohmann::json& json() const { return *value_; }
  const std::string& path() const { return path_; }
  bool is_null() const { return value_->is_null(); }

  // The member `key` of this object; error if this is not an object or the
  // member is missing. A present-but-null member is returned (check is_null).
  Result<JsonField> member(std::string_view key) const;
  // The member `key`, or nullopt when it is absent or null; error if this is
  // not an object.
  Result<std::optional<JsonField>> optional_member(std::string_view key) const;
  // Element `index` of this array (caller checked the size).
  JsonField element(size_t index) const;
  // The member `key` (holding `value`) met while iterating this object; its
  // path is written `parent["key"]`.
  JsonField entry(const std::string& key, const nlohmann::json& value) const;

  Result<std::string> as_string() const;
  // A view into the document (lives as long as the document).
  Result<std::string_view> as_string_view() const;
  Result<bool> as_bool() const;
  Result<int64_t> as_int() const;
  // Error unless this is an array / object.
  Status expect_array() const;
  Status expect_object() const;

  // Typed members with a default used when the member is absent or null.
  Result<std::string> string_or(std::string_view key, std::string fallback) const;
  Result<bool> bool_or(std::string_view key, bool fallback) const;
  Result<int64_t> int_or(std::string_view key, int64_t fallback) const;
  Result<std::string> required_string(std::string_view key) const;

  // "<source>: <path>: <what>" as invalid_argument.
  Status error(std::string_view what) const;
  // "unsupported value \"x\" (supported: ...)" for this node.
  Status unsupported(std::string_view value, std::string_view supported) const;

 private:
  std::string describe_type() const;

  const nlohmann::json* value_;
  std::string path_;
  const std::string* source_;
};

// `text` as a JSON string literal, for error messages (invalid UTF-8 is
// shown as U+FFFD instead of throwing).
std::string json_quote(std::string_view text);

// Parses `text` as JSON; a syntax error names `source`, the byte offset and
// the parser's message.
Result<nlohmann::json> parse_json_document(std::string_view text, const std::string& source);

}  // namespace dancemoe::tokenizer
