#include "common/base/json_field.h"

#include <cmath>
#include <limits>

#include "common/base/file_util.h"
#include "common/base/json_nesting.h"
#include "common/base/json_preview.h"

namespace dancemoe {
namespace {

// A value as shown in an error: its JSON text, shortened.
std::string describe(const nlohmann::json* value) {
  if (value == nullptr) return "nothing (the field is missing)";
  return json_preview(*value);
}

}  // namespace

const nlohmann::json* JsonField::find(std::string_view key) const {
  if (!value_->is_object()) return nullptr;
  auto it = value_->find(key);
  return it == value_->end() ? nullptr : &*it;
}

std::string JsonField::child_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool JsonField::has(std::string_view key) const {
  const nlohmann::json* value = find(key);
  return value != nullptr && !value->is_null();
}

std::string JsonField::prefix() const { return source_->empty() ? "" : *source_ + ": "; }

Status JsonField::error(std::string_view what) const {
  std::string message = prefix();
  message += path_.empty() ? std::string("(top level)") : path_;
  message += ": ";
  message += what;
  return invalid_argument(std::move(message));
}

Status JsonField::expected(std::string_view what) const {
  return error("expected " + std::string(what) + ", got " + describe(value_));
}

Status JsonField::member_error(std::string_view key, std::string_view expected) const {
  return invalid_argument(prefix() + child_path(key) + ": expected " + std::string(expected) +
                          ", got " + describe(find(key)));
}

Status JsonField::unsupported(std::string_view value, std::string_view supported) const {
  return error("unsupported value " + json_quote(value) + " (supported: " + std::string(supported) +
               ")");
}

Status JsonField::expect_array() const {
  return value_->is_array() ? Status::ok() : expected("an array");
}

Status JsonField::expect_object() const {
  return value_->is_object() ? Status::ok() : expected("an object");
}

Result<JsonField> JsonField::member(std::string_view key) const {
  DMOE_RETURN_IF_ERROR(expect_object());
  const nlohmann::json* value = find(key);
  if (value == nullptr)
    return JsonField(*value_, *source_, child_path(key)).error("missing required field");
  return JsonField(*value, *source_, child_path(key));
}

Result<std::optional<JsonField>> JsonField::optional_member(std::string_view key) const {
  DMOE_RETURN_IF_ERROR(expect_object());
  const nlohmann::json* value = find(key);
  if (value == nullptr || value->is_null()) return std::optional<JsonField>();
  return std::optional<JsonField>(JsonField(*value, *source_, child_path(key)));
}

JsonField JsonField::element(size_t index) const {
  return JsonField((*value_)[index], *source_, path_ + "[" + std::to_string(index) + "]");
}

JsonField JsonField::entry(const std::string& key, const nlohmann::json& value) const {
  return JsonField(value, *source_, path_ + "[" + json_quote(key) + "]");
}

Result<std::string> JsonField::as_string() const {
  if (!value_->is_string()) return expected("a string");
  return value_->get<std::string>();
}

Result<std::string_view> JsonField::as_string_view() const {
  if (!value_->is_string()) return expected("a string");
  return std::string_view(value_->get_ref<const std::string&>());
}

Result<bool> JsonField::as_bool() const {
  if (!value_->is_boolean()) return expected("true or false");
  return value_->get<bool>();
}

Result<int64_t> JsonField::as_int() const {
  if (value_->is_number_integer()) {
    if (value_->is_number_unsigned() &&
        value_->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return expected("an integer that fits 64 bits");
    }
    return value_->get<int64_t>();
  }
  return expected("an integer");
}

Result<uint64_t> JsonField::as_uint() const {
  if (value_->is_number_unsigned()) return value_->get<uint64_t>();
  return expected("a non-negative integer");
}

Result<std::string> JsonField::required_string(std::string_view key) const {
  DMOE_ASSIGN_OR_RETURN(JsonField field, member(key));
  return field.as_string();
}

Result<std::string> JsonField::string_or(std::string_view key, std::string fallback) const {
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> field, optional_member(key));
  if (!field) return fallback;
  return field->as_string();
}

Result<bool> JsonField::bool_or(std::string_view key, bool fallback) const {
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> field, optional_member(key));
  if (!field) return fallback;
  return field->as_bool();
}

Result<int64_t> JsonField::int_or(std::string_view key, int64_t fallback) const {
  DMOE_ASSIGN_OR_RETURN(std::optional<JsonField> field, optional_member(key));
  if (!field) return fallback;
  return field->as_int();
}

Result<int64_t> JsonField::positive_int(std::string_view key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr || !value->is_number_integer() || value->get<int64_t>() <= 0) {
    return member_error(key, "a positive integer");
  }
  return value->get<int64_t>();
}

Result<int64_t> JsonField::positive_int_or(std::string_view key, int64_t fallback) const {
  if (!has(key)) return fallback;
  return positive_int(key);
}

Result<int64_t> JsonField::non_negative_int_or(std::string_view key, int64_t fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json* value = find(key);
  if (!value->is_number_integer() || value->get<int64_t>() < 0) {
    return member_error(key, "a non-negative integer");
  }
  return value->get<int64_t>();
}

Result<double> JsonField::positive_number(std::string_view key) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr || !value->is_number() || !(value->get<double>() > 0)) {
    return member_error(key, "a positive number");
  }
  return value->get<double>();
}

Result<double> JsonField::positive_number_or(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  return positive_number(key);
}

Result<std::vector<int64_t>> JsonField::int_list_or(std::string_view key,
                                                    std::vector<int64_t> fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json* value = find(key);
  if (!value->is_array()) return member_error(key, "a list of integers");
  std::vector<int64_t> out;
  for (const auto& item : *value) {
    if (!item.is_number_integer()) return member_error(key, "a list of integers");
    out.push_back(item.get<int64_t>());
  }
  return out;
}

Result<std::vector<int64_t>> JsonField::int_or_int_list(std::string_view key) const {
  if (!has(key)) return std::vector<int64_t>{};
  const nlohmann::json* value = find(key);
  if (value->is_number_integer()) return std::vector<int64_t>{value->get<int64_t>()};
  return int_list_or(key, {});
}

Result<const nlohmann::json*> JsonField::required(std::string_view key) const {
  DMOE_RETURN_IF_ERROR(expect_object());
  const nlohmann::json* value = find(key);
  if (value == nullptr || value->is_null()) {
    return JsonField(*value_, *source_, child_path(key)).error("missing required field");
  }
  return value;
}

Result<double> JsonField::finite_positive(std::string_view key) const {
  DMOE_ASSIGN_OR_RETURN(const nlohmann::json* value, required(key));
  if (!value->is_number() || !std::isfinite(value->get<double>()) || !(value->get<double>() > 0)) {
    return member_error(key, "a finite number > 0");
  }
  return value->get<double>();
}

Result<double> JsonField::finite_positive_or(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  return finite_positive(key);
}

Result<double> JsonField::finite_non_negative(std::string_view key) const {
  DMOE_ASSIGN_OR_RETURN(const nlohmann::json* value, required(key));
  if (!value->is_number() || !std::isfinite(value->get<double>()) || value->get<double>() < 0) {
    return member_error(key, "a finite number >= 0");
  }
  return value->get<double>();
}

Result<double> JsonField::finite_non_negative_or(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  return finite_non_negative(key);
}

Result<int64_t> JsonField::int_in(std::string_view key, int64_t lo, int64_t hi) const {
  DMOE_ASSIGN_OR_RETURN(const nlohmann::json* value, required(key));
  if (!value->is_number_integer() ||
      (value->is_number_unsigned() &&
       value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) ||
      value->get<int64_t>() < lo || value->get<int64_t>() > hi) {
    return member_error(key, "an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return value->get<int64_t>();
}

Result<int64_t> JsonField::int_in_or(std::string_view key, int64_t lo, int64_t hi,
                                     int64_t fallback) const {
  if (!has(key)) return fallback;
  return int_in(key, lo, hi);
}

std::string json_quote(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<nlohmann::json> parse_json_document(std::string_view text, const std::string& source) {
  // nlohmann reports syntax errors by exception; this adapter turns them into
  // a Status (STYLE.md: third-party exceptions are caught in the adapter).
  DMOE_RETURN_IF_ERROR(check_json_nesting(text, source));
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return invalid_argument(source + ": malformed JSON at byte " + std::to_string(e.byte) + ": " +
                            e.what());
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but still the input's fault: a number beyond a
    // double's range (1E999) is out_of_range.406, thrown by the parser too.
    return invalid_argument(source + ": malformed JSON: " + e.what());
  }
}

Result<nlohmann::json> read_json_file(const std::filesystem::path& path, uint64_t max_bytes) {
  DMOE_ASSIGN_OR_RETURN(std::string text, read_file(path, max_bytes));
  return parse_json_document(text, path.string());
}

}  // namespace dancemoe
