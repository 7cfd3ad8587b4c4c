#include "common/tokenizer/json_field.h"

namespace dancemoe::tokenizer {

std::string JsonField::describe_type() const { return std::string(value_->type_name()); }

Status JsonField::error(std::string_view what) const {
  std::string message = *source_;
  message += ": ";
  message += path_.empty() ? std::string("(top level)") : path_;
  message += ": ";
  message += what;
  return invalid_argument(std::move(message));
}

Status JsonField::unsupported(std::string_view value, std::string_view supported) const {
  return error("unsupported value " + json_quote(value) + " (supported: " + std::string(supported) +
               ")");
}

Status JsonField::expect_array() const {
  if (value_->is_array()) return Status::ok();
  return error("expected an array, found " + describe_type());
}

Status JsonField::expect_object() const {
  if (value_->is_object()) return Status::ok();
  return error("expected an object, found " + describe_type());
}

Result<JsonField> JsonField::member(std::string_view key) const {
  DMOE_RETURN_IF_ERROR(expect_object());
  const std::string child_path = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  auto it = value_->find(key);
  if (it == value_->end()) {
    return JsonField(*value_, child_path, *source_).error("missing required field");
  }
  return JsonField(*it, child_path, *source_);
}

Result<std::optional<JsonField>> JsonField::optional_member(std::string_view key) const {
  DMOE_RETURN_IF_ERROR(expect_object());
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::optional<JsonField>();
  const std::string child_path = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  return std::optional<JsonField>(JsonField(*it, child_path, *source_));
}

JsonField JsonField::element(size_t index) const {
  return JsonField((*value_)[index], path_ + "[" + std::to_string(index) + "]", *source_);
}

JsonField JsonField::entry(const std::string& key, const nlohmann::json& value) const {
  return JsonField(value, path_ + "[" + json_quote(key) + "]", *source_);
}

Result<std::string> JsonField::as_string() const {
  if (!value_->is_string()) return error("expected a string, found " + describe_type());
  return value_->get<std::string>();
}

Result<std::string_view> JsonField::as_string_view() const {
  if (!value_->is_string()) return error("expected a string, found " + describe_type());
  return std::string_view(value_->get_ref<const std::string&>());
}

Result<bool> JsonField::as_bool() const {
  if (!value_->is_boolean()) return error("expected true or false, found " + describe_type());
  return value_->get<bool>();
}

Result<int64_t> JsonField::as_int() const {
  if (value_->is_number_integer()) return value_->get<int64_t>();
  if (value_->is_number_unsigned()) {
    const uint64_t v = value_->get<uint64_t>();
    if (v <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(v);
  }
  return error("expected an integer, found " + value_->dump());
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

Result<std::string> JsonField::required_string(std::string_view key) const {
  DMOE_ASSIGN_OR_RETURN(JsonField field, member(key));
  return field.as_string();
}

std::string json_quote(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<nlohmann::json> parse_json_document(std::string_view text, const std::string& source) {
  // nlohmann reports syntax errors by exception; this adapter turns them into
  // a Status (STYLE.md: third-party exceptions are caught in the adapter).
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return invalid_argument(source + ": malformed JSON at byte " + std::to_string(e.byte) + ": " +
                            e.what());
  }
}

}  // namespace dancemoe::tokenizer
