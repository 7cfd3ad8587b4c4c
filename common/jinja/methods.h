// The Python methods chat templates call on values: str (strip, lstrip,
// rstrip, split, rsplit, splitlines, startswith, endswith, lower, upper,
// title, capitalize, replace, find, rfind, count, join, isdigit, isalpha,
// isspace, islower, isupper), dict (items, keys, values, get) and list/tuple
// (index, count). Arguments and results follow Python; a wrong argument type
// fails naming the method. Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "common/jinja/call_args.h"
#include "common/jinja/render_state.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

bool has_method(const Value& receiver, std::string_view name);
Value call_method(RenderState& state, const Value& receiver, std::string_view name,
                  const CallArgs& args, SourceLocation where);

}  // namespace dancemoe::jinja
