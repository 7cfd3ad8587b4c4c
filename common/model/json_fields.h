// Typed access to the fields of a JSON configuration object with errors that
// name the file and the field and say what was expected, e.g.
//   "config.json: field 'hidden_size': expected a positive integer, got "abc"".
// Wraps a json object by reference; the object must outlive the reader.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"

namespace dancemoe {

class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string file_name)
      : object_(object), file_name_(std::move(file_name)) {}

  const std::string& file_name() const { return file_name_; }
  bool has(std::string_view field) const;

  Result<int64_t> positive_int(std::string_view field) const;
  Result<int64_t> positive_int_or(std::string_view field, int64_t fallback) const;
  Result<int64_t> non_negative_int_or(std::string_view field, int64_t fallback) const;
  Result<double> positive_number(std::string_view field) const;
  Result<double> positive_number_or(std::string_view field, double fallback) const;
  Result<bool> bool_or(std::string_view field, bool fallback) const;
  Result<std::string> string(std::string_view field) const;
  // An integer list; an absent or null field gives `fallback`.
  Result<std::vector<int64_t>> int_list_or(std::string_view field,
                                           std::vector<int64_t> fallback) const;
  // A single integer or a list of integers (as eos_token_id may be); absent/null -> empty.
  Result<std::vector<int64_t>> int_or_int_list(std::string_view field) const;

  Status error(std::string_view field, std::string_view expected) const;

 private:
  const nlohmann::json* find(std::string_view field) const;

  const nlohmann::json& object_;
  std::string file_name_;
};

}  // namespace dancemoe
