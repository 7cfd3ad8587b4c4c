#include "common/jinja/is_tests.h"

#include <algorithm>

#include "common/jinja/access.h"
#include "common/jinja/operators.h"

namespace dancemoe::jinja {
namespace {

constexpr std::string_view kTests[] = {
    "defined",  "undefined", "none",    "boolean",     "true",     "false",       "integer",
    "float",    "number",    "string",  "mapping",     "iterable", "sequence",    "callable",
    "sameas",   "eq",        "equalto", "==",          "ne",       "!=",          "lt",
    "lessthan", "<",         "le",      "<=",          "gt",       "greaterthan", ">",
    "ge",       ">=",        "in",      "divisibleby", "even",     "odd",         "lower",
    "upper",    "escaped"};

const Value& other(const CallArgs& args, std::string_view name, SourceLocation where) {
  ArgReader a(args, "test '" + std::string(name) + "'", {"other"}, where);
  return a.required(0);
}

int64_t integer_subject(const Value& v, std::string_view name, SourceLocation where) {
  if (v.is_undefined()) fail_undefined(v, where);
  if (!v.is_int() && !v.is_bool()) {
    fail(where,
         "test '" + std::string(name) + "' needs an integer, not " + std::string(v.type_name()));
  }
  return v.as_int();
}

bool same_as(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kList:
      return &a.as_list() == &b.as_list();
    case Value::Kind::kDict:
      return &a.as_dict() == &b.as_dict();
    case Value::Kind::kString:
      return &a.as_string() == &b.as_string() || a.as_string() == b.as_string();
    default:
      return a.equals(b);
  }
}

}  // namespace

bool has_test(std::string_view name) {
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

bool apply_test(RenderState& state, std::string_view name, const Value& v, const CallArgs& args,
                SourceLocation where) {
  (void)state;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "callable") return v.is_callable();
  if (name == "escaped") return false;
  if (name == "sameas") return same_as(v, other(args, name, where));
  if (name == "eq" || name == "equalto" || name == "==")
    return compare("==", v, other(args, name, where), where);
  if (name == "ne" || name == "!=") return compare("!=", v, other(args, name, where), where);
  if (name == "lt" || name == "lessthan" || name == "<")
    return compare("<", v, other(args, name, where), where);
  if (name == "le" || name == "<=") return compare("<=", v, other(args, name, where), where);
  if (name == "gt" || name == "greaterthan" || name == ">")
    return compare(">", v, other(args, name, where), where);
  if (name == "ge" || name == ">=") return compare(">=", v, other(args, name, where), where);
  if (name == "in") return contains(other(args, name, where), v, where);
  if (name == "divisibleby") {
    ArgReader a(args, "test 'divisibleby'", {"num"}, where);
    const int64_t n = a.int_or(0, 0);
    if (n == 0) fail(where, "divisibleby(0)");
    return integer_subject(v, name, where) % n == 0;
  }
  if (name == "even") return integer_subject(v, name, where) % 2 == 0;
  if (name == "odd") return integer_subject(v, name, where) % 2 != 0;
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    const std::string& s = v.as_string();
    const bool has_lower =
        std::any_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    const bool has_upper =
        std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
    return name == "lower" ? has_lower && !has_upper : has_upper && !has_lower;
  }
  fail(where, "no test named '" + std::string(name) + "'");
}

}  // namespace dancemoe::jinja
