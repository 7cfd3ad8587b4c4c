#include "common/generation/json_schema_grammar.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "common/generation/grammar_matcher.h"

namespace dancemoe {
namespace {

using ordered = nlohmann::ordered_json;

// Whether `text` is a whole sentence of the schema's grammar.
bool accepts(const std::string& schema, const std::string& text) {
  auto grammar = json_schema_grammar(ordered::parse(schema));
  REQUIRE(grammar.is_ok());
  GrammarMatcher m(std::make_shared<Grammar>(std::move(*grammar)));
  GrammarMatcher::StateId s = m.initial();
  for (char c : text) s = m.advance(s, static_cast<uint8_t>(c));
  return m.accepting(s);
}

std::string refusal(const std::string& schema) {
  auto grammar = json_schema_grammar(ordered::parse(schema));
  REQUIRE_FALSE(grammar.is_ok());
  CHECK(grammar.status().code() == StatusCode::kInvalidArgument);
  return grammar.status().message();
}

}  // namespace

TEST_CASE("json schema grammar: objects keep the schema's order, required and optional members") {
  const std::string s = R"({"type": "object", "properties": {"b": {"type": "integer"},
      "a": {"type": "string"}, "c": {"type": "boolean"}}, "required": ["b", "c"]})";
  CHECK(accepts(s, R"({"b":1,"c":true})"));
  CHECK(accepts(s, R"({"b": -12, "a": "x\"y\u00e9", "c": false})"));
  CHECK(accepts(s, "{\n  \"b\": 0,\n  \"c\": true\n}"));
  CHECK_FALSE(accepts(s, R"({"c":true,"b":1})"));   // order
  CHECK_FALSE(accepts(s, R"({"b":1})"));            // c is required
  CHECK_FALSE(accepts(s, R"({"b":01,"c":true})"));  // no leading zero
  CHECK_FALSE(accepts(s, R"({"b":1,"c":true,"d":1})"));
  CHECK_FALSE(accepts(s, R"({"b":1,"c":true} )"));  // nothing after the value
}

TEST_CASE("json schema grammar: strings are valid UTF-8 JSON strings within their lengths") {
  const std::string s = R"({"type": "string", "minLength": 2, "maxLength": 3})";
  CHECK(accepts(s, R"("ab")"));
  CHECK(accepts(s, "\"\xc3\xa9\xe2\x82\xac\\n\""));  // 3 characters, 6 bytes
  CHECK_FALSE(accepts(s, R"("a")"));
  CHECK_FALSE(accepts(s, R"("abcd")"));
  CHECK_FALSE(accepts(s, "\"a\xc3\""));          // a broken character
  CHECK_FALSE(accepts(s, "\"a\xed\xa0\x80\""));  // an encoded surrogate
  CHECK_FALSE(accepts(s, R"("a\ud800")"));       // a lone surrogate escape
  CHECK_FALSE(accepts(s, "\"a\nb\""));           // a raw control character
  CHECK(accepts(R"({"format": "date"})", R"("2024-04-30")"));
  CHECK_FALSE(accepts(R"({"format": "date"})", R"("2024-02-30")"));
  CHECK(accepts(R"({"format": "date-time"})", R"("2024-01-31T23:59:59.5Z")"));
  CHECK(accepts(R"({"type": "string", "format": "uuid"})",
                R"("123e4567-e89b-12d3-a456-426614174000")"));
}

TEST_CASE("json schema grammar: integer bounds, numbers, enums, const, anyOf and null") {
  const std::string range = R"({"type": "integer", "minimum": -15, "maximum": 230})";
  for (int v : {-15, -9, -1, 0, 7, 10, 99, 100, 199, 229, 230}) {
    CHECK_MESSAGE(accepts(range, std::to_string(v)), v);
  }
  for (int v : {-16, -20, 231, 300, 1000}) CHECK_MESSAGE(!accepts(range, std::to_string(v)), v);
  CHECK_FALSE(accepts(range, "-0"));
  const std::string exclusive = R"({"type": "integer", "exclusiveMinimum": 5})";
  CHECK_FALSE(accepts(exclusive, "5"));
  CHECK(accepts(exclusive, "6"));
  CHECK(accepts(exclusive, "123456789012345678"));
  CHECK_FALSE(accepts(exclusive, "1234567890123456789"));  // 19 digits
  CHECK(accepts(R"({"type": "number"})", "-0.5e-3"));
  CHECK_FALSE(accepts(R"({"type": "number", "minimum": 0})", "-1"));
  CHECK(accepts(R"({"enum": ["red", 3, null]})", "3"));
  CHECK_FALSE(accepts(R"({"enum": ["red", 3, null]})", "\"blue\""));
  CHECK(accepts(R"({"const": {"k": [1]}})", R"({"k":[1]})"));
  const std::string any_of = R"({"anyOf": [{"type": "string"}, {"type": "array",
      "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}]})";
  CHECK(accepts(any_of, "[1, 2]"));
  CHECK_FALSE(accepts(any_of, "[]"));
  CHECK_FALSE(accepts(any_of, "[1,2,3]"));
  CHECK(accepts(R"({"type": ["integer", "null"]})", "null"));
  CHECK(accepts(R"({"type": "string", "nullable": true})", "null"));
}

TEST_CASE("json schema grammar: recursive $ref, free objects and json_object") {
  const std::string tree = R"({"$defs": {"node": {"type": "object", "properties": {
      "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v", "kids"], "additionalProperties": false}}, "$ref": "#/$defs/node"})";
  CHECK(accepts(tree, R"({"v":1,"kids":[{"v":2,"kids":[]},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  CHECK_FALSE(accepts(tree, R"({"v":1,"kids":[{"v":2}]})"));
  CHECK(accepts(R"({"type": "object"})", R"({"any": [1, {"x": null}], "b": "c"})"));
  CHECK(accepts(R"({"type": "object", "additionalProperties": {"type": "integer"}})",
                R"({"x": 1, "y": 2})"));
  CHECK_FALSE(accepts(R"({"type": "object", "additionalProperties": {"type": "integer"}})",
                      R"({"x": "1"})"));
  auto object = json_object_grammar();
  REQUIRE(object.is_ok());
  GrammarMatcher m(std::make_shared<Grammar>(std::move(*object)));
  GrammarMatcher::StateId s = m.initial();
  for (char c : std::string(R"({"a": [true, 1.5, "x"]})"))
    s = m.advance(s, static_cast<uint8_t>(c));
  CHECK(m.accepting(s));
  CHECK_FALSE(m.can_continue(s));
  CHECK(m.advance(m.initial(), '[') == GrammarMatcher::kRejected);  // an object, not an array
}

TEST_CASE("json schema grammar: unsupported keywords are refused by name and place") {
  CHECK(refusal(R"({"type": "object", "properties": {"zip": {"type": "string",
      "pattern": "^[0-9]{5}$"}}})") == "properties.zip.pattern: 'pattern' is not supported");
  CHECK(refusal(R"({"not": {}})") == "not: 'not' is not supported");
  CHECK(refusal(R"({"type": "string", "format": "email"})") ==
        "format: format 'email' is not supported (date, time, date-time, uuid)");
  CHECK(refusal(R"({"type": "number", "maximum": 3})")
            .find("'maximum' is not supported on "
                  "numbers") != std::string::npos);
  CHECK(refusal(R"({"allOf": [{}, {}]})").find("allOf with more than one") != std::string::npos);
  CHECK(refusal(R"({"type": "strnig"})").find("unknown type 'strnig'") != std::string::npos);
  CHECK(refusal(R"({"$ref": "#/$defs/missing"})").find("names nothing") != std::string::npos);
  CHECK(refusal(R"({"$ref": "http://example.com/s.json"})").find("only references within") !=
        std::string::npos);
  CHECK(refusal(R"({"type": "array", "maxItems": 100000})")
            .find("maxItems must be an integer in "
                  "0..10000") != std::string::npos);
  CHECK(refusal(R"({"type": "object", "required": ["x"]})").find("'x' is required but not") !=
        std::string::npos);
  CHECK(refusal("false").find("admits no value") != std::string::npos);
  // Found by libFuzzer: a non-boolean nullable threw from nlohmann's value().
  CHECK(refusal(R"({"type": "object", "nullable": ["a"]})") ==
        "nullable: nullable must be true or false");
}

TEST_CASE("json schema grammar: a schema deeper than the bound is refused, not recursed into") {
  std::string deep = "{}";
  for (int i = 0; i < 100; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  CHECK(refusal(deep).find("nests deeper than 64 levels") != std::string::npos);
}

TEST_CASE("json schema grammar: a schema whose grammar would be too large is refused early") {
  nlohmann::ordered_json schema = {{"type", "object"},
                                   {"properties", nlohmann::ordered_json::object()}};
  for (int i = 0; i < 300; ++i) {
    schema["properties"]["p" + std::to_string(i)] = {{"type", "string"}, {"minLength", 10000}};
  }
  auto grammar = json_schema_grammar(schema);
  REQUIRE_FALSE(grammar.is_ok());
  CHECK(grammar.status().code() == StatusCode::kResourceExhausted);
  CHECK(grammar.status().message().find("larger than this node follows") != std::string::npos);
}

TEST_CASE("grammar matcher: a $ref to itself without content is bounded, not a hang") {
  auto grammar = json_schema_grammar(ordered::parse(R"({"$ref": "#"})"));
  REQUIRE(grammar.is_ok());
  GrammarMatcher m(std::make_shared<Grammar>(std::move(*grammar)));
  CHECK(m.initial() == GrammarMatcher::kRejected);
  CHECK(m.overflowed());
}

}  // namespace dancemoe
