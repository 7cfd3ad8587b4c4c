// The global functions a chat template may call: jinja2's range(),
// namespace() and dict(), and the two HF adds to its environment:
// raise_exception(message) (fails the render with the template's own
// message; TemplateError::raised()) and strftime_now(format) (the render's
// clock, RenderState::now(), in local time, formatted as Python's strftime).
// range() is bounded by the render's list limit. Thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "common/jinja/value.h"

namespace dancemoe::jinja {

// The built-in called `name`, or nullopt.
std::optional<Value> builtin_global(std::string_view name);

}  // namespace dancemoe::jinja
