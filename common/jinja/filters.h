// jinja2's built-in filters that chat templates use, plus HF's `tojson`
// (json.dumps with ensure_ascii=False and insertion-ordered keys; jinja2's
// own tojson HTML-escapes and sorts, which HF replaces):
//   abs attr capitalize center count d default dictsort e escape first float
//   format indent int items join last length list lower map max min reject
//   rejectattr replace reverse round safe select selectattr sort string sum
//   title tojson trim unique upper wordcount
// Arguments follow jinja2's signatures (positional or by name). Pure
// functions over the render's budget (RenderState); thread-safe.
#pragma once

#include <string_view>

#include "common/jinja/call_args.h"
#include "common/jinja/render_state.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

bool has_filter(std::string_view name);
Value apply_filter(RenderState& state, std::string_view name, const Value& subject,
                   const CallArgs& args, SourceLocation where);

}  // namespace dancemoe::jinja
