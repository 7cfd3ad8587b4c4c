#include "edge_node/http/response_format.h"

#include "common/base/json_nesting.h"
#include "common/base/json_preview.h"
#include "common/generation/json_schema_grammar.h"

namespace dancemoe::node {
namespace {

using ordered = nlohmann::ordered_json;

std::variant<ResponseGrammar, ApiError> from_schema(const std::string& where,
                                                    const std::string& param,
                                                    const ordered& schema) {
  Result<Grammar> grammar = json_schema_grammar(schema);
  if (!grammar.is_ok()) {
    const std::string& detail = grammar.status().message();
    // The converter names places inside the schema ("properties.x.pattern: ...").
    const bool placed =
        detail.find(": ") != std::string::npos && detail.find(": ") < detail.find(' ');
    return invalid_request(param, where + (placed ? "." : ": ") + detail,
                           grammar.status().code() == StatusCode::kResourceExhausted
                               ? "schema_too_large"
                               : "unsupported_schema");
  }
  return std::make_shared<const Grammar>(std::move(*grammar));
}

ApiError expected(const std::string& where, const std::string& param, const std::string& what,
                  const ordered& got) {
  return invalid_request(param, where + ": expected " + what + ", got " + json_preview(got),
                         "invalid_type");
}

}  // namespace

std::variant<ResponseGrammar, ApiError> parse_response_format(const std::string& field,
                                                              const ordered& value) {
  if (field == "json_schema") return from_schema(field, field, value);
  if (field == "guided_json") {
    if (!value.is_string()) return from_schema(field, field, value);
    const std::string& text = value.get_ref<const std::string&>();
    if (Status deep = check_json_nesting(text, field); !deep.is_ok()) {
      return invalid_request(field, deep.message());
    }
    const ordered schema = ordered::parse(text, nullptr, false);
    if (schema.is_discarded()) {
      return invalid_request(field, "guided_json: the string is not a JSON schema");
    }
    return from_schema(field, field, schema);
  }
  const std::string& param = field;  // response_format
  if (!value.is_object()) return expected(field, param, "an object {\"type\": ...}", value);
  const auto type = value.find("type");
  if (type == value.end() || !type->is_string()) {
    return expected(field + ".type", param, "\"text\", \"json_object\" or \"json_schema\"",
                    type == value.end() ? ordered(nullptr) : *type);
  }
  for (const auto& [key, unused] : value.items()) {
    if (key != "type" && key != "json_schema") {
      return invalid_request(param, field + ": unknown field '" + key + "'", "unknown_parameter");
    }
  }
  const std::string& kind = type->get_ref<const std::string&>();
  if (kind == "text") return ResponseGrammar();
  if (kind == "json_object") {
    Result<Grammar> grammar = json_object_grammar();
    if (!grammar.is_ok()) return api_error_from_status(grammar.status(), param);
    return std::make_shared<const Grammar>(std::move(*grammar));
  }
  if (kind != "json_schema") {
    return invalid_request(param, field + ".type: '" + kind +
                                      "' is not one of \"text\", \"json_object\", \"json_schema\"");
  }
  const auto spec = value.find("json_schema");
  const std::string where = field + ".json_schema";
  if (spec == value.end() || !spec->is_object()) {
    return expected(where, param, "an object {\"name\", \"schema\"}",
                    spec == value.end() ? ordered(nullptr) : *spec);
  }
  for (const auto& [key, v] : spec->items()) {
    if (key == "name" || key == "description") {
      if (!v.is_string()) return expected(where + "." + key, param, "a string", v);
    } else if (key == "strict") {
      if (!v.is_boolean() && !v.is_null())
        return expected(where + ".strict", param, "true or false", v);
    } else if (key != "schema") {
      return invalid_request(param, where + ": unknown field '" + key + "'", "unknown_parameter");
    }
  }
  const auto schema = spec->find("schema");
  if (schema == spec->end() || schema->is_null()) {
    return invalid_request(param, where + ".schema: missing (the JSON schema to follow)",
                           "missing_required");
  }
  return from_schema(where + ".schema", param, *schema);
}

}  // namespace dancemoe::node
