// Python's arithmetic and comparison operators over values, as a template
// sees them: + (numbers, str, list/tuple), - * / // % ** (numbers; str * int,
// list * int; str % args formatting with %s %d %i %r %f %%), unary - +, and
// the ordering comparisons < > <= >= (numbers, strings, lists). Integers are
// 64-bit: overflow fails rather than wrapping. Using an undefined value
// fails with its message (jinja2's UndefinedError). Pure functions.
#pragma once

#include <string_view>

#include "common/jinja/render_state.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

Value binary_operator(RenderState& state, std::string_view op, const Value& a, const Value& b,
                      SourceLocation where);
Value unary_operator(std::string_view op, const Value& v, SourceLocation where);
// op is one of == != < > <= >=.
bool compare(std::string_view op, const Value& a, const Value& b, SourceLocation where);

}  // namespace dancemoe::jinja
