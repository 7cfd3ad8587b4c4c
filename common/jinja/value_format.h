// Values as text, the way Python writes them -- what a chat template's output
// is made of -- and values from/to JSON:
//
//   to_str      str(v): what {{ v }} prints (None -> "None", True -> "True",
//               1e16 -> "1e+16", ['a', 1] -> "['a', 1]"); undefined -> "".
//   repr        repr(v) (strings quoted as Python quotes them).
//   to_json     json.dumps(v, ...) as HF's `tojson` filter calls it
//               (transformers' chat template environment): ensure_ascii
//               false by default, separators ", " / ": " (or "," with an
//               indent), keys in insertion order unless sort_keys.
//   from_json   a JSON value (nlohmann's ordered_json, so that object keys
//               keep the order the client sent them in, as Python's json
//               module keeps them) as a Value; integers stay int, other
//               numbers float.
//
// Python details that are approximated: repr() escapes only ASCII control
// characters (Python also escapes non-printable Unicode such as U+00A0).
// Throws TemplateError (at `where`) for what Python refuses: serializing
// undefined, a namespace or a function; nesting beyond kMaxValueDepth.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/jinja/template_error.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

std::string to_str(const Value& v, SourceLocation where = {});
std::string repr(const Value& v, SourceLocation where = {});
// Python's repr(float): shortest round-trip digits, fixed notation for
// decimal exponents in [-4, 16), else "1e+16" style; "nan", "inf".
std::string float_repr(double d);
// Python's repr(str).
std::string string_repr(std::string_view s);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // per level; absent: one line
  bool ensure_ascii = false;
  std::optional<std::string> item_separator;  // default ", " (or "," with an indent)
  std::optional<std::string> key_separator;   // default ": "
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonDumpOptions& options, SourceLocation where = {});

Value from_json(const nlohmann::ordered_json& json, SourceLocation where = {});

}  // namespace dancemoe::jinja
