// The grammars of OpenAI's response_format, for constrained decoding
// (token_constraint.h): "json_object" is any JSON object; "json_schema" is
// the JSON text of values its schema accepts. Output is compact JSON with
// bounded whitespace (a space, or a newline and up to 20 spaces, between
// tokens), object properties in the schema's order, integers of at most 18
// digits and fractions of at most 16, so that a model cannot run on forever
// inside one number or one stretch of blanks.
//
// Supported (JSON Schema 2020-12, and what OpenAI's strict mode allows):
//   type (one or a list), enum, const, anyOf, oneOf (as anyOf), allOf with
//   one schema, $ref to "#", "#/$defs/..." or "#/definitions/..." (recursion
//   allowed), nullable (OpenAPI);
//   object: properties, required, additionalProperties (false, true or a
//   schema; with properties, only the named ones are generated);
//   array: items, prefixItems, minItems, maxItems;
//   string: minLength, maxLength (<= 10000), format date, time, date-time,
//   uuid (dates never past a month's 28th..31st; no February 29th);
//   integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum;
//   number: minimum 0 only;
//   annotations (title, description, default, examples, $schema, $id,
//   $comment, deprecated, readOnly, writeOnly) are ignored.
// Anything else (pattern, patternProperties, not, if/then/else, multipleOf,
// uniqueItems, other formats, ...) is an invalid_argument naming the
// keyword and where it is, e.g. "properties.zip.pattern: 'pattern' is not
// supported". Sizes are bounded (schema depth, grammar elements), so a
// hostile schema costs bounded time and memory.
//
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "common/base/status.h"
#include "common/generation/grammar.h"

namespace dancemoe {

Result<Grammar> json_object_grammar();
// The schema as the client wrote it: an ordered_json keeps the order of
// "properties", which is the order they are generated in.
Result<Grammar> json_schema_grammar(const nlohmann::ordered_json& schema);

}  // namespace dancemoe
