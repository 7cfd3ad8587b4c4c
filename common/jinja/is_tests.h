// The `is` tests of jinja2 (defined, undefined, none, boolean, true, false,
// integer, float, number, string, mapping, iterable, sequence, callable,
// sameas, eq/equalto/==, ne/!=, lt/<, le/<=, gt/>, ge/>=, in, divisibleby,
// even, odd, lower, upper, escaped), with Python's notion of each type (a
// bool is a number but not an integer; a string is iterable; an undefined
// value is iterable, as jinja2's Undefined is). Pure functions.
#pragma once

#include <string_view>

#include "common/jinja/call_args.h"
#include "common/jinja/render_state.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

bool has_test(std::string_view name);
bool apply_test(RenderState& state, std::string_view name, const Value& subject,
                const CallArgs& args, SourceLocation where);

}  // namespace dancemoe::jinja
