// Reading into values as jinja2 does in its sandbox: `x.name` tries the
// attribute, then the item; `x[key]` the item, then the attribute. A dict's
// attributes are its methods (items, keys, values, get), a string's and a
// list's theirs (methods.h); anything missing is undefined (with the
// message jinja2 would give when it is used), except that reading from an
// undefined value fails at once, as jinja2's Undefined does. Methods that
// would mutate a list or dict (append, update, ...) are refused as
// ImmutableSandboxedEnvironment refuses them.
//
// Also Python's slicing (list, tuple and string; negative bounds and steps)
// and membership (`in`). Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "common/jinja/render_state.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

Value get_attribute(const Value& object, std::string_view name, SourceLocation where);
Value get_item(const Value& object, const Value& key, SourceLocation where);
// Bounds may be null (absent) or None.
Value get_slice(RenderState& state, const Value& object, const Value* start, const Value* stop,
                const Value* step, SourceLocation where);
// Python's `item in container`.
bool contains(const Value& container, const Value& item, SourceLocation where);
// Fails with the message of an undefined value that is being used.
[[noreturn]] void fail_undefined(const Value& undefined, SourceLocation where);

}  // namespace dancemoe::jinja
