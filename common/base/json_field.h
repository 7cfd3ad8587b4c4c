// JsonField: the one reader of JSON documents from outside (config.json,
// tokenizer.json, placement files, ...). A read-only view of one node of a
// parsed document that knows its path, so that every error names the file,
// the path and what was expected, e.g.
//   "m/config.json: hidden_size: expected a positive integer, got "abc""
//   "m/tokenizer.json: pre_tokenizer.pretokenizers[1].type: unsupported
//    value "Whitespace" (supported: ByteLevel, Sequence, Split)".
//
// Two families of accessors: conversions of this node (as_int, as_string,
// ...) and typed members of this object with or without a default
// (positive_int("n"), int_or("n", 4), ...); a member that is absent or null
// takes the default. A JsonField borrows the document and the source name;
// both must outlive it. Values are plain views: thread-safe to read
// concurrently.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

class JsonField {
 public:
  // The root of a document read from `source` (a file name, or what the
  // document is, e.g. "PlacementPrepare"; empty when the caller prefixes
  // errors itself); `path` is empty at the root.
  JsonField(const nlohmann::json& value, const std::string& source, std::string path = "")
      : value_(&value), path_(std::move(path)), source_(&source) {}
  // The source name is borrowed: a temporary would dangle.
  JsonField(const nlohmann::json& value, std::string&& source, std::string path = "") = delete;

  const nlohmann::json& json() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& source() const { return *source_; }
  bool is_null() const { return value_->is_null(); }
  // True when this is an object with a non-null member `key`.
  bool has(std::string_view key) const;

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

  // Conversions of this node.
  Result<std::string> as_string() const;
  Result<std::string_view> as_string_view() const;  // a view into the document
  Result<bool> as_bool() const;
  Result<int64_t> as_int() const;
  Result<uint64_t> as_uint() const;
  Status expect_array() const;
  Status expect_object() const;

  // Typed members of this object.
  Result<std::string> required_string(std::string_view key) const;
  Result<std::string> string_or(std::string_view key, std::string fallback) const;
  Result<bool> bool_or(std::string_view key, bool fallback) const;
  Result<int64_t> int_or(std::string_view key, int64_t fallback) const;
  Result<int64_t> positive_int(std::string_view key) const;
  Result<int64_t> positive_int_or(std::string_view key, int64_t fallback) const;
  Result<int64_t> non_negative_int_or(std::string_view key, int64_t fallback) const;
  Result<double> positive_number(std::string_view key) const;
  Result<double> positive_number_or(std::string_view key, double fallback) const;
  Result<std::vector<int64_t>> int_list_or(std::string_view key,
                                           std::vector<int64_t> fallback) const;
  // A single integer or a list of integers (as eos_token_id may be); absent/null -> empty.
  Result<std::vector<int64_t>> int_or_int_list(std::string_view key) const;
  // Bounded members of configuration files: finite numbers > 0 or >= 0, and
  // integers in [lo, hi]. The `_or` forms give `fallback` when the member is
  // absent or null; the others say "missing required field".
  Result<double> finite_positive(std::string_view key) const;
  Result<double> finite_positive_or(std::string_view key, double fallback) const;
  Result<double> finite_non_negative(std::string_view key) const;
  Result<double> finite_non_negative_or(std::string_view key, double fallback) const;
  Result<int64_t> int_in(std::string_view key, int64_t lo, int64_t hi) const;
  Result<int64_t> int_in_or(std::string_view key, int64_t lo, int64_t hi, int64_t fallback) const;

  // "<source>: <path>: <what>" as invalid_argument.
  Status error(std::string_view what) const;
  // "<source>: <path>.<key>: expected <expected>, got <value>" (or "got
  // nothing (the field is missing)").
  Status member_error(std::string_view key, std::string_view expected) const;
  // "unsupported value \"x\" (supported: ...)" for this node.
  Status unsupported(std::string_view value, std::string_view supported) const;

 private:
  const nlohmann::json* find(std::string_view key) const;
  std::string child_path(std::string_view key) const;
  Status expected(std::string_view what) const;  // "expected <what>, got <this value>"
  std::string prefix() const;                    // "<source>: " or ""
  Result<const nlohmann::json*> required(std::string_view key) const;

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
// Reads and parses a JSON file of at most `max_bytes`; errors name the path.
Result<nlohmann::json> read_json_file(const std::filesystem::path& path,
                                      uint64_t max_bytes = uint64_t{64} << 20);

}  // namespace dancemoe
