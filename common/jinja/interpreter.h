// Interpreter: runs a parsed template (ast.h) over its variables and returns
// the text it renders. Follows jinja2's semantics where templates can tell
// the difference:
//   - scopes: a for-loop iteration and a macro call each get a fresh scope
//     (a `set` inside does not leak out, and is not seen by the next
//     iteration: hence namespace()); `if` and `with`-less blocks do not;
//     macros see the template's top-level variables at call time;
//   - names resolve to the innermost scope, then the render's variables,
//     then the built-ins (builtins.h); a missing name is undefined;
//   - `loop` has index, index0, revindex, revindex0, first, last, length,
//     previtem, nextitem, depth, depth0 and cycle(); a for-loop's `if`
//     filter is applied first, so loop.length and loop.last count the items
//     kept;
//   - `and` / `or` return an operand (Python), `~` concatenates str() of
//     both sides; `{{ }}` prints str() of its value (value_format.h);
//   - macros return their rendered text; extra arguments fail, missing ones
//     are undefined; `varargs` and `kwargs` are empty.
// Bounded by RenderState (steps, sizes, macro call depth). Throws
// TemplateError; template.h turns that into a Status.
#pragma once

#include <string>

#include "common/jinja/ast.h"
#include "common/jinja/render_state.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

std::string interpret(const Body& body, const ValueDict& variables, RenderState& state);

}  // namespace dancemoe::jinja
