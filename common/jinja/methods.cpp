#include "common/jinja/methods.h"

#include <algorithm>

#include "common/jinja/text.h"
#include "common/jinja/value_format.h"

namespace dancemoe::jinja {
namespace {

constexpr std::string_view kStringMethods[] = {
    "strip", "lstrip",  "rstrip",  "split",      "rsplit",  "splitlines", "startswith", "endswith",
    "lower", "upper",   "title",   "capitalize", "replace", "find",       "rfind",      "count",
    "join",  "isdigit", "isalpha", "isspace",    "islower", "isupper"};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get"};
constexpr std::string_view kListMethods[] = {"index", "count"};

template <size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

Value string_list(RenderState& state, std::vector<std::string> parts, SourceLocation where) {
  state.check_list(parts.size(), where);
  ValueList out;
  out.reserve(parts.size());
  for (std::string& p : parts) out.push_back(Value::string(std::move(p)));
  return Value::list(std::move(out));
}

// startswith/endswith take a string or a tuple of strings.
bool affix_matches(const Value& affix, std::string_view s, bool prefix, std::string_view method,
                   SourceLocation where) {
  auto one = [&](const Value& v) {
    if (!v.is_string()) {
      fail(where, std::string(method) + "() argument must be str or a tuple of str, not " +
                      std::string(v.type_name()));
    }
    const std::string& a = v.as_string();
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0
                  : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (affix.is_list()) {
    return std::any_of(affix.as_list().begin(), affix.as_list().end(), one);
  }
  return one(affix);
}

template <typename Pred>
bool all_code_points(std::string_view s, Pred pred) {
  if (s.empty()) return false;
  for (size_t pos = 0; pos < s.size();) {
    if (!pred(utf8_next(s, pos))) return false;
  }
  return true;
}

Value string_method(RenderState& state, const std::string& s, std::string_view name,
                    const CallArgs& args, SourceLocation where) {
  const std::string fn = "str." + std::string(name);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgReader a(args, fn, {"chars"}, where);
    return Value::string(py_strip(s, a.string_or_none(0), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    ArgReader a(args, fn, {"sep", "maxsplit"}, where);
    const std::optional<std::string> sep = a.string_or_none(0);
    if (sep && sep->empty()) fail(where, fn + "(): empty separator");
    const int64_t max_split = a.int_or(1, -1);
    return string_list(
        state, name == "split" ? py_split(s, sep, max_split) : py_rsplit(s, sep, max_split), where);
  }
  if (name == "splitlines") {
    ArgReader a(args, fn, {"keepends"}, where);
    const bool keep = a.bool_or(0, false);
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\n' && s[i] != '\r') continue;
      size_t end = i + 1;
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++end;
      lines.push_back(s.substr(start, (keep ? end : i) - start));
      start = end;
      i = end - 1;
    }
    if (start < s.size()) lines.push_back(s.substr(start));
    return string_list(state, std::move(lines), where);
  }
  if (name == "startswith" || name == "endswith") {
    ArgReader a(args, fn, {"prefix"}, where);
    return Value::boolean(affix_matches(a.required(0), s, name == "startswith", fn, where));
  }
  if (name == "lower" || name == "upper" || name == "title" || name == "capitalize") {
    ArgReader a(args, fn, {}, where);
    if (name == "lower") return Value::string(ascii_lower(s));
    if (name == "upper") return Value::string(ascii_upper(s));
    if (name == "title") return Value::string(ascii_title(s));
    return Value::string(ascii_capitalize(s));
  }
  if (name == "replace") {
    ArgReader a(args, fn, {"old", "new", "count"}, where);
    const Value& old = a.required(0);
    const Value& replacement = a.required(1);
    if (!old.is_string() || !replacement.is_string()) fail(where, fn + "() arguments must be str");
    const int64_t count = a.int_or(2, -1);
    std::string out = py_replace(s, old.as_string(), replacement.as_string(), count);
    state.check_string(out.size(), where);
    return Value::string(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    ArgReader a(args, fn, {"sub"}, where);
    const Value& sub = a.required(0);
    if (!sub.is_string()) fail(where, fn + "() argument must be str");
    const std::string& needle = sub.as_string();
    if (name == "count") {
      if (needle.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s) + 1));
      int64_t n = 0;
      for (size_t pos = s.find(needle); pos != std::string::npos;
           pos = s.find(needle, pos + needle.size()))
        ++n;
      return Value::integer(n);
    }
    const size_t hit = name == "find" ? s.find(needle) : s.rfind(needle);
    if (hit == std::string::npos) return Value::integer(-1);
    return Value::integer(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, hit))));
  }
  if (name == "join") {
    ArgReader a(args, fn, {"iterable"}, where);
    const Value& items = a.required(0);
    if (!items.is_list()) fail(where, fn + "() argument must be a list of str");
    std::string out;
    bool first = true;
    for (const Value& item : items.as_list()) {
      if (!item.is_string()) {
        fail(where, fn + "(): expected str instance, " + std::string(item.type_name()) + " found");
      }
      if (!first) out += s;
      first = false;
      out += item.as_string();
      state.check_string(out.size(), where);
    }
    return Value::string(std::move(out));
  }
  ArgReader a(args, fn, {}, where);
  if (name == "isdigit")
    return Value::boolean(all_code_points(s, [](uint32_t c) { return c >= '0' && c <= '9'; }));
  if (name == "isalpha") {
    return Value::boolean(all_code_points(s, [](uint32_t c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
    }));
  }
  if (name == "isspace") return Value::boolean(all_code_points(s, is_space));
  const bool has_lower =
      std::any_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
  const bool has_upper =
      std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  if (name == "islower") return Value::boolean(has_lower && !has_upper);
  return Value::boolean(has_upper && !has_lower);  // isupper
}

Value dict_method(RenderState& state, const ValueDict& d, std::string_view name,
                  const CallArgs& args, SourceLocation where) {
  const std::string fn = "dict." + std::string(name);
  if (name == "get") {
    ArgReader a(args, fn, {"key", "default"}, where);
    const Value& key = a.required(0);
    if (key.is_string()) {
      if (const Value* v = d.find(key.as_string())) return *v;
    }
    return a.value_or(1, Value::none());
  }
  ArgReader a(args, fn, {}, where);
  state.check_list(d.size(), where);
  ValueList out;
  out.reserve(d.size());
  for (const auto& [key, value] : d.items()) {
    if (name == "keys") {
      out.push_back(Value::string(key));
    } else if (name == "values") {
      out.push_back(value);
    } else {
      out.push_back(Value::tuple({Value::string(key), value}));
    }
  }
  return Value::list(std::move(out));
}

Value list_method(const ValueList& items, std::string_view name, const CallArgs& args,
                  SourceLocation where) {
  const std::string fn = "list." + std::string(name);
  ArgReader a(args, fn, {"value"}, where);
  const Value& needle = a.required(0);
  int64_t count = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].equals(needle)) continue;
    if (name == "index") return Value::integer(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") fail(where, repr(needle, where) + " is not in list");
  return Value::integer(count);
}

}  // namespace

bool has_method(const Value& receiver, std::string_view name) {
  if (receiver.is_string()) return listed(kStringMethods, name);
  if (receiver.is_dict()) return listed(kDictMethods, name);
  if (receiver.is_list()) return listed(kListMethods, name);
  return false;
}

Value call_method(RenderState& state, const Value& receiver, std::string_view name,
                  const CallArgs& args, SourceLocation where) {
  if (receiver.is_string()) return string_method(state, receiver.as_string(), name, args, where);
  if (receiver.is_dict()) return dict_method(state, receiver.as_dict(), name, args, where);
  if (receiver.is_list()) return list_method(receiver.as_list(), name, args, where);
  fail(where, "'" + std::string(receiver.type_name()) + "' object has no method '" +
                  std::string(name) + "'");
}

}  // namespace dancemoe::jinja
