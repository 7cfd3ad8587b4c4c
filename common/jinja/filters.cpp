#include "common/jinja/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/jinja/access.h"
#include "common/jinja/is_tests.h"
#include "common/jinja/operators.h"
#include "common/jinja/text.h"
#include "common/jinja/value_format.h"

namespace dancemoe::jinja {
namespace {

constexpr std::string_view kFilters[] = {
    "abs",      "attr",   "capitalize", "center",     "count",      "d",        "default",
    "dictsort", "e",      "escape",     "first",      "float",      "format",   "indent",
    "int",      "items",  "join",       "last",       "length",     "list",     "lower",
    "map",      "max",    "min",        "reject",     "rejectattr", "replace",  "reverse",
    "round",    "safe",   "select",     "selectattr", "sort",       "string",   "sum",
    "title",    "tojson", "trim",       "unique",     "upper",      "wordcount"};

// The items a filter iterates: list/tuple items, dict keys, string
// characters; undefined is empty.
ValueList items_of(const Value& v, std::string_view filter, SourceLocation where) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.as_list();
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& [key, value] : v.as_dict().items()) keys.push_back(Value::string(key));
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      const std::string& s = v.as_string();
      const std::vector<size_t> offsets = utf8_offsets(s);
      for (size_t k = 0; k + 1 < offsets.size(); ++k) {
        chars.push_back(Value::string(s.substr(offsets[k], offsets[k + 1] - offsets[k])));
      }
      return chars;
    }
    default:
      fail(where, "filter '" + std::string(filter) + "': '" + std::string(v.type_name()) +
                      "' object is not iterable");
  }
}

// jinja2's make_attrgetter: "a.b.0" reads item by item.
Value attribute_path(const Value& v, const std::string& path, SourceLocation where) {
  Value cur = v;
  for (const std::string& part : py_split(path, std::string("."), -1)) {
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                                     [](char c) { return c >= '0' && c <= '9'; });
    cur = get_item(cur, digits ? Value::integer(std::atoll(part.c_str())) : Value::string(part),
                   where);
    if (cur.is_undefined()) return cur;
  }
  return cur;
}

// Sort key: lower-cased strings unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(ascii_lower(v.as_string()));
  return v;
}

bool less(const Value& a, const Value& b, SourceLocation where) {
  return compare("<", a, b, where);
}

Value length_of(const Value& v, SourceLocation where) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return Value::integer(0);
    case Value::Kind::kString:
      return Value::integer(static_cast<int64_t>(utf8_length(v.as_string())));
    case Value::Kind::kList:
      return Value::integer(static_cast<int64_t>(v.as_list().size()));
    case Value::Kind::kDict:
      return Value::integer(static_cast<int64_t>(v.as_dict().size()));
    case Value::Kind::kNamespace:
      return Value::integer(static_cast<int64_t>(v.as_namespace().attributes.size()));
    default:
      fail(where, "object of type '" + std::string(v.type_name()) + "' has no len()");
  }
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// select/reject (attr = null) and selectattr/rejectattr: args after the
// filter's own are the test name and the test's arguments.
Value select(RenderState& state, const Value& subject, const CallArgs& args, bool keep,
             bool by_attr, std::string_view filter, SourceLocation where) {
  size_t next = 0;
  std::string attribute;
  if (by_attr) {
    if (args.positional.empty() || !args.positional[0].is_string()) {
      fail(where, "filter '" + std::string(filter) + "' needs an attribute name");
    }
    attribute = args.positional[0].as_string();
    next = 1;
  }
  std::string test;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string())
      fail(where, "filter '" + std::string(filter) + "': test name must be a string");
    test = args.positional[next].as_string();
    ++next;
    if (!has_test(test)) fail(where, "no test named '" + test + "'");
  }
  CallArgs test_args;
  test_args.positional.assign(
      args.positional.begin() + static_cast<std::ptrdiff_t>(std::min(next, args.positional.size())),
      args.positional.end());
  test_args.keywords = args.keywords;
  ValueList out;
  for (const Value& item : items_of(subject, filter, where)) {
    state.step(where);
    const Value probe = by_attr ? attribute_path(item, attribute, where) : item;
    const bool passed =
        test.empty() ? probe.truthy() : apply_test(state, test, probe, test_args, where);
    if (passed == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value map_filter(RenderState& state, const Value& subject, const CallArgs& args,
                 SourceLocation where) {
  ValueList out;
  const ValueList items = items_of(subject, "map", where);
  if (args.positional.empty()) {
    ArgReader a(args, "filter 'map'", {"attribute", "default"}, where);
    const std::string attribute = a.string_or(0, "");
    if (attribute.empty()) fail(where, "filter 'map' needs a filter name or attribute=");
    for (const Value& item : items) {
      state.step(where);
      Value v = attribute_path(item, attribute, where);
      if (v.is_undefined() && a.get(1)) v = *a.get(1);
      out.push_back(std::move(v));
    }
    return Value::list(std::move(out));
  }
  if (!args.positional[0].is_string()) fail(where, "filter 'map': filter name must be a string");
  const std::string name = args.positional[0].as_string();
  if (!has_filter(name)) fail(where, "no filter named '" + name + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keywords = args.keywords;
  for (const Value& item : items) {
    state.step(where);
    out.push_back(apply_filter(state, name, item, rest, where));
  }
  return Value::list(std::move(out));
}

Value min_max(const Value& subject, const CallArgs& args, bool want_max, SourceLocation where) {
  const std::string fn = want_max ? "filter 'max'" : "filter 'min'";
  ArgReader a(args, fn, {"case_sensitive", "attribute"}, where);
  const bool case_sensitive = a.bool_or(0, false);
  const std::string attribute = a.string_or(1, "");
  const ValueList items = items_of(subject, fn, where);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const Value* best = &items[0];
  Value best_key =
      sort_key(attribute.empty() ? *best : attribute_path(*best, attribute, where), case_sensitive);
  for (const Value& item : items) {
    Value key =
        sort_key(attribute.empty() ? item : attribute_path(item, attribute, where), case_sensitive);
    if (want_max ? less(best_key, key, where) : less(key, best_key, where)) {
      best = &item;
      best_key = std::move(key);
    }
  }
  return *best;
}

Value sort_filter(const Value& subject, const CallArgs& args, SourceLocation where) {
  ArgReader a(args, "filter 'sort'", {"reverse", "case_sensitive", "attribute"}, where);
  const bool reverse = a.bool_or(0, false);
  const bool case_sensitive = a.bool_or(1, false);
  const std::string attribute = a.string_or(2, "");
  ValueList items = items_of(subject, "sort", where);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) {
    keyed.emplace_back(
        sort_key(attribute.empty() ? items[i] : attribute_path(items[i], attribute, where),
                 case_sensitive),
        i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? less(y.first, x.first, where) : less(x.first, y.first, where);
  });
  ValueList out;
  for (const auto& [key, index] : keyed) out.push_back(items[index]);
  return Value::list(std::move(out));
}

Value dictsort_filter(const Value& subject, const CallArgs& args, SourceLocation where) {
  ArgReader a(args, "filter 'dictsort'", {"case_sensitive", "by", "reverse"}, where);
  if (!subject.is_dict())
    fail(where, "filter 'dictsort' needs a dict, not " + std::string(subject.type_name()));
  const bool case_sensitive = a.bool_or(0, false);
  const std::string by = a.string_or(1, "key");
  const bool reverse = a.bool_or(2, false);
  if (by != "key" && by != "value") fail(where, "filter 'dictsort': by must be 'key' or 'value'");
  std::vector<std::pair<std::string, Value>> items = subject.as_dict().items();
  std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
    const Value kx = sort_key(by == "key" ? Value::string(x.first) : x.second, case_sensitive);
    const Value ky = sort_key(by == "key" ? Value::string(y.first) : y.second, case_sensitive);
    return reverse ? less(ky, kx, where) : less(kx, ky, where);
  });
  ValueList out;
  for (auto& [key, value] : items) out.push_back(Value::tuple({Value::string(key), value}));
  return Value::list(std::move(out));
}

Value tojson_filter(RenderState& state, const Value& subject, const CallArgs& args,
                    SourceLocation where) {
  ArgReader a(args, "filter 'tojson'", {"ensure_ascii", "indent", "separators", "sort_keys"},
              where);
  JsonDumpOptions options;
  options.ensure_ascii = a.bool_or(0, false);
  if (const Value* indent = a.get(1); indent && !indent->is_none()) {
    if (indent->is_string()) {
      options.indent = indent->as_string();
    } else if (indent->is_int()) {
      options.indent =
          std::string(static_cast<size_t>(std::clamp<int64_t>(indent->as_int(), 0, 64)), ' ');
    } else {
      fail(where, "filter 'tojson': indent must be an integer or a string");
    }
  }
  if (const Value* seps = a.get(2); seps && !seps->is_none()) {
    if (!seps->is_list() || seps->as_list().size() != 2 || !seps->as_list()[0].is_string() ||
        !seps->as_list()[1].is_string()) {
      fail(where, "filter 'tojson': separators must be a pair of strings");
    }
    options.item_separator = seps->as_list()[0].as_string();
    options.key_separator = seps->as_list()[1].as_string();
  }
  options.sort_keys = a.bool_or(3, false);
  std::string out = to_json(subject, options, where);
  state.check_string(out.size(), where);
  return Value::string(std::move(out));
}

Value indent_filter(RenderState& state, const Value& subject, const CallArgs& args,
                    SourceLocation where) {
  ArgReader a(args, "filter 'indent'", {"width", "first", "blank"}, where);
  std::string pad;
  if (const Value* w = a.get(0); w && w->is_string()) {
    pad = w->as_string();
  } else {
    pad = std::string(static_cast<size_t>(std::clamp<int64_t>(a.int_or(0, 4), 0, 256)), ' ');
  }
  const bool first = a.bool_or(1, false);
  const bool blank = a.bool_or(2, false);
  const std::string s = to_str(subject, where);
  std::string out;
  size_t start = 0;
  bool is_first = true;
  while (start <= s.size()) {
    size_t end = s.find('\n', start);
    const bool last = end == std::string::npos;
    if (last) end = s.size();
    const std::string_view line(s.data() + start, end - start);
    if ((!is_first || first) && (blank || !line.empty())) out += pad;
    out += line;
    if (last) break;
    out += '\n';
    start = end + 1;
    is_first = false;
    state.check_string(out.size(), where);
  }
  return Value::string(std::move(out));
}

Value to_number(const Value& subject, bool want_float, const CallArgs& args, SourceLocation where) {
  ArgReader a(args, want_float ? "filter 'float'" : "filter 'int'", {"default", "base"}, where);
  const Value fallback = a.value_or(0, want_float ? Value::floating(0.0) : Value::integer(0));
  double d = 0;
  if (subject.is_number()) {
    d = subject.as_double();
    if (!want_float && !subject.is_float()) return Value::integer(subject.as_int());
  } else if (subject.is_string()) {
    const std::string s = py_strip(subject.as_string(), std::nullopt, true, true);
    char* end = nullptr;
    if (!want_float) {
      const long long i = std::strtoll(s.c_str(), &end, static_cast<int>(a.int_or(1, 10)));
      if (!s.empty() && end == s.c_str() + s.size()) return Value::integer(i);
    }
    d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return fallback;
  } else {
    return fallback;
  }
  if (want_float) return Value::floating(d);
  if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return fallback;
  return Value::integer(static_cast<int64_t>(d));
}

}  // namespace

bool has_filter(std::string_view name) {
  return std::find(std::begin(kFilters), std::end(kFilters), name) != std::end(kFilters);
}

Value apply_filter(RenderState& state, std::string_view name, const Value& v, const CallArgs& args,
                   SourceLocation where) {
  const std::string fn = "filter '" + std::string(name) + "'";
  if (name == "default" || name == "d") {
    ArgReader a(args, fn, {"default_value", "boolean"}, where);
    const bool use_default = a.bool_or(1, false) ? !v.truthy() : v.is_undefined();
    return use_default ? a.value_or(0, Value::string("")) : v;
  }
  if (name == "tojson") return tojson_filter(state, v, args, where);
  if (name == "map") return map_filter(state, v, args, where);
  if (name == "select" || name == "reject")
    return select(state, v, args, name == "select", false, name, where);
  if (name == "selectattr" || name == "rejectattr") {
    return select(state, v, args, name == "selectattr", true, name, where);
  }
  if (name == "indent") return indent_filter(state, v, args, where);
  if (name == "sort") return sort_filter(v, args, where);
  if (name == "dictsort") return dictsort_filter(v, args, where);
  if (name == "max" || name == "min") return min_max(v, args, name == "max", where);
  if (name == "float" || name == "int") return to_number(v, name == "float", args, where);
  if (name == "format") {
    Value tuple = Value::tuple(args.positional);
    if (!v.is_string()) fail(where, "filter 'format' needs a string");
    return binary_operator(state, "%", v, tuple, where);
  }
  if (name == "join") {
    ArgReader a(args, fn, {"d", "attribute"}, where);
    const std::string sep = a.string_or(0, "");
    const std::string attribute = a.string_or(1, "");
    std::string out;
    bool first = true;
    for (const Value& item : items_of(v, name, where)) {
      if (!first) out += sep;
      first = false;
      out += to_str(attribute.empty() ? item : attribute_path(item, attribute, where), where);
      state.check_string(out.size(), where);
    }
    return Value::string(std::move(out));
  }
  if (name == "attr") {
    ArgReader a(args, fn, {"name"}, where);
    const Value& attribute = a.required(0);
    if (!attribute.is_string()) fail(where, "filter 'attr': name must be a string");
    return get_attribute(v, attribute.as_string(), where);
  }
  if (name == "replace") {
    ArgReader a(args, fn, {"old", "new", "count"}, where);
    const Value& old = a.required(0);
    const Value& replacement = a.required(1);
    std::string out = py_replace(to_str(v, where), to_str(old, where), to_str(replacement, where),
                                 a.int_or(2, -1));
    state.check_string(out.size(), where);
    return Value::string(std::move(out));
  }
  if (name == "trim") {
    ArgReader a(args, fn, {"chars"}, where);
    return Value::string(py_strip(to_str(v, where), a.string_or_none(0), true, true));
  }
  if (name == "center") {
    ArgReader a(args, fn, {"width"}, where);
    const std::string s = to_str(v, where);
    const int64_t width = std::min<int64_t>(a.int_or(0, 80), 4096);
    const int64_t len = static_cast<int64_t>(utf8_length(s));
    if (width <= len) return Value::string(s);
    const int64_t total = width - len;
    const int64_t left = total / 2 + (total & width & 1);  // as CPython pads
    return Value::string(std::string(static_cast<size_t>(left), ' ') + s +
                         std::string(static_cast<size_t>(total - left), ' '));
  }
  if (name == "round") {
    ArgReader a(args, fn, {"precision", "method"}, where);
    if (!v.is_number()) fail(where, "filter 'round' needs a number");
    const int64_t precision = std::clamp<int64_t>(a.int_or(0, 0), -300, 300);
    const std::string method = a.string_or(1, "common");
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.as_double() * scale;
    double r = 0;
    if (method == "common") {
      r = std::nearbyint(x);  // Python's round(): ties to even
    } else if (method == "ceil") {
      r = std::ceil(x);
    } else if (method == "floor") {
      r = std::floor(x);
    } else {
      fail(where, "filter 'round': method must be common, ceil or floor");
    }
    return Value::floating(r / scale);
  }
  if (name == "sum") {
    ArgReader a(args, fn, {"attribute", "start"}, where);
    const std::string attribute = a.string_or(0, "");
    Value total = a.value_or(1, Value::integer(0));
    for (const Value& item : items_of(v, name, where)) {
      total =
          binary_operator(state, "+", total,
                          attribute.empty() ? item : attribute_path(item, attribute, where), where);
    }
    return total;
  }
  if (name == "unique") {
    ArgReader a(args, fn, {"case_sensitive", "attribute"}, where);
    const bool case_sensitive = a.bool_or(0, false);
    const std::string attribute = a.string_or(1, "");
    ValueList out;
    ValueList seen;
    for (const Value& item : items_of(v, name, where)) {
      state.step(where, static_cast<int64_t>(seen.size()));
      Value key = sort_key(attribute.empty() ? item : attribute_path(item, attribute, where),
                           case_sensitive);
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); }))
        continue;
      seen.push_back(std::move(key));
      out.push_back(item);
    }
    return Value::list(std::move(out));
  }
  // The rest take no arguments.
  ArgReader a(args, fn, {}, where);
  if (name == "length" || name == "count") return length_of(v, where);
  if (name == "string") return Value::string(to_str(v, where));
  if (name == "safe") return v.is_string() ? v : Value::string(to_str(v, where));
  if (name == "list") return Value::list(items_of(v, name, where));
  if (name == "items") {
    if (v.is_undefined()) return Value::list({});
    if (!v.is_dict())
      fail(where, "filter 'items' needs a mapping, not " + std::string(v.type_name()));
    ValueList out;
    for (const auto& [key, value] : v.as_dict().items())
      out.push_back(Value::tuple({Value::string(key), value}));
    return Value::list(std::move(out));
  }
  if (name == "first" || name == "last") {
    ValueList items = items_of(v, name, where);
    if (items.empty())
      return Value::undefined("No " + std::string(name) + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      ValueList chars = items_of(v, name, where);
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->as_string();
      return Value::string(std::move(out));
    }
    ValueList items = items_of(v, name, where);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "abs") {
    if (!v.is_number()) fail(where, "filter 'abs' needs a number");
    if (v.is_float()) return Value::floating(std::fabs(v.as_double()));
    if (v.as_int() == INT64_MIN) fail(where, "integer overflow (beyond 64 bits)");
    return Value::integer(std::llabs(v.as_int()));
  }
  if (name == "wordcount") {
    return Value::integer(
        static_cast<int64_t>(py_split(to_str(v, where), std::nullopt, -1).size()));
  }
  const std::string s = to_str(v, where);
  if (name == "lower") return Value::string(ascii_lower(s));
  if (name == "upper") return Value::string(ascii_upper(s));
  if (name == "title") return Value::string(ascii_title(s));
  if (name == "capitalize") return Value::string(ascii_capitalize(s));
  if (name == "e" || name == "escape") return Value::string(html_escape(s));
  fail(where, "no filter named '" + std::string(name) + "'");
}

}  // namespace dancemoe::jinja
