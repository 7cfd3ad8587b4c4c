#include "common/model/json_fields.h"

namespace dancemoe {
namespace {

std::string describe(const nlohmann::json* value) {
  if (value == nullptr) return "nothing (the field is missing)";
  std::string text = value->dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

}  // namespace

const nlohmann::json* JsonFields::find(std::string_view field) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(std::string(field));
  return it == object_.end() ? nullptr : &*it;
}

bool JsonFields::has(std::string_view field) const {
  const nlohmann::json* value = find(field);
  return value != nullptr && !value->is_null();
}

Status JsonFields::error(std::string_view field, std::string_view expected) const {
  return invalid_argument(file_name_ + ": field '" + std::string(field) + "': expected " +
                          std::string(expected) + ", got " + describe(find(field)));
}

Result<int64_t> JsonFields::positive_int(std::string_view field) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr || !value->is_number_integer() || value->get<int64_t>() <= 0) {
    return error(field, "a positive integer");
  }
  return value->get<int64_t>();
}

Result<int64_t> JsonFields::positive_int_or(std::string_view field, int64_t fallback) const {
  if (!has(field)) return fallback;
  return positive_int(field);
}

Result<int64_t> JsonFields::non_negative_int_or(std::string_view field, int64_t fallback) const {
  if (!has(field)) return fallback;
  const nlohmann::json* value = find(field);
  if (!value->is_number_integer() || value->get<int64_t>() < 0) {
    return error(field, "a non-negative integer");
  }
  return value->get<int64_t>();
}

Result<double> JsonFields::positive_number(std::string_view field) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr || !value->is_number() || !(value->get<double>() > 0)) {
    return error(field, "a positive number");
  }
  return value->get<double>();
}

Result<double> JsonFields::positive_number_or(std::string_view field, double fallback) const {
  if (!has(field)) return fallback;
  return positive_number(field);
}

Result<bool> JsonFields::bool_or(std::string_view field, bool fallback) const {
  if (!has(field)) return fallback;
  const nlohmann::json* value = find(field);
  if (!value->is_boolean()) return error(field, "true or false");
  return value->get<bool>();
}

Result<std::string> JsonFields::string(std::string_view field) const {
  const nlohmann::json* value = find(field);
  if (value == nullptr || !value->is_string()) return error(field, "a string");
  return value->get<std::string>();
}

Result<std::vector<int64_t>> JsonFields::int_list_or(std::string_view field,
                                                     std::vector<int64_t> fallback) const {
  if (!has(field)) return fallback;
  const nlohmann::json* value = find(field);
  if (!value->is_array()) return error(field, "a list of integers");
  std::vector<int64_t> out;
  for (const auto& item : *value) {
    if (!item.is_number_integer()) return error(field, "a list of integers");
    out.push_back(item.get<int64_t>());
  }
  return out;
}

Result<std::vector<int64_t>> JsonFields::int_or_int_list(std::string_view field) const {
  if (!has(field)) return std::vector<int64_t>{};
  const nlohmann::json* value = find(field);
  if (value->is_number_integer()) return std::vector<int64_t>{value->get<int64_t>()};
  return int_list_or(field, {});
}

}  // namespace dancemoe
