// The output constraints a request can ask for, turned into a grammar for
// constrained decoding (common/generation/json_schema_grammar.h):
//
//   response_format  (OpenAI) {"type": "text"} | {"type": "json_object"} |
//                    {"type": "json_schema", "json_schema": {"name",
//                    "schema", "strict", "description"}}
//   guided_json      (vLLM) a schema, or its JSON text
//   json_schema      (llama-server) a schema
//
// A schema feature the converter does not support is a 400 naming the
// field and the place in the schema, e.g. "response_format.json_schema.
// schema.properties.zip.pattern: 'pattern' is not supported".
// Pure functions; thread-safe.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "common/generation/grammar.h"
#include "edge_node/http/openai_errors.h"

namespace dancemoe::node {

// nullptr: free text ({"type": "text"}).
using ResponseGrammar = std::shared_ptr<const Grammar>;

// `field`: "response_format", "guided_json" or "json_schema".
std::variant<ResponseGrammar, ApiError> parse_response_format(const std::string& field,
                                                              const nlohmann::ordered_json& value);

}  // namespace dancemoe::node
