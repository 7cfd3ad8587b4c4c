#include "common/jinja/value_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/jinja/text.h"

namespace dancemoe::jinja {
namespace {

void check_depth(int depth, SourceLocation where) {
  if (depth > kMaxValueDepth) {
    fail(where, "value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  }
}

void append_repr(std::string& out, const Value& v, int depth, SourceLocation where);

void append_str(std::string& out, const Value& v, int depth, SourceLocation where) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return;
    case Value::Kind::kString:
      out += v.as_string();
      return;
    default:
      append_repr(out, v, depth, where);
  }
}

void append_items(std::string& out, const ValueList& items, int depth, SourceLocation where) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    append_repr(out, items[i], depth + 1, where);
  }
}

void append_dict_repr(std::string& out, const ValueDict& dict, int depth, SourceLocation where) {
  out += '{';
  bool first = true;
  for (const auto& [key, value] : dict.items()) {
    if (!first) out += ", ";
    first = false;
    out += string_repr(key);
    out += ": ";
    append_repr(out, value, depth + 1, where);
  }
  out += '}';
}

void append_repr(std::string& out, const Value& v, int depth, SourceLocation where) {
  check_depth(depth, where);
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      out += "Undefined";  // repr(); str() of an undefined is "" (append_str)
      return;
    case Value::Kind::kNone:
      out += "None";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat:
      out += float_repr(v.as_double());
      return;
    case Value::Kind::kString:
      out += string_repr(v.as_string());
      return;
    case Value::Kind::kList:
      out += v.is_tuple() ? '(' : '[';
      append_items(out, v.as_list(), depth, where);
      if (v.is_tuple() && v.as_list().size() == 1) out += ',';
      out += v.is_tuple() ? ')' : ']';
      return;
    case Value::Kind::kDict:
      append_dict_repr(out, v.as_dict(), depth, where);
      return;
    case Value::Kind::kNamespace:
      out += "<Namespace ";
      append_dict_repr(out, v.as_namespace().attributes, depth, where);
      out += '>';
      return;
    case Value::Kind::kCallable:
      out += "<function ";
      out += v.as_callable()->name();
      out += '>';
      return;
  }
}

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto u_escape = [&](uint32_t unit) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 0xF];
  };
  out += '"';
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const uint32_t cp = utf8_next(s, pos);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
      if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        u_escape(0xD800 | (v >> 10));
        u_escape(0xDC00 | (v & 0x3FF));
      } else {
        u_escape(cp);
      }
    } else {
      out.append(s.substr(start, pos - start));
    }
  }
  out += '"';
}

struct JsonWriter {
  const JsonDumpOptions& options;
  SourceLocation where;
  std::string item_separator;
  std::string key_separator;
  std::string out;

  void newline(int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += *options.indent;
  }

  void write(const Value& v, int level) {
    check_depth(level, where);
    switch (v.kind()) {
      case Value::Kind::kNone:
        out += "null";
        return;
      case Value::Kind::kBool:
        out += v.as_bool() ? "true" : "false";
        return;
      case Value::Kind::kInt:
        out += std::to_string(v.as_int());
        return;
      case Value::Kind::kFloat: {
        const double d = v.as_double();
        if (std::isnan(d)) {
          out += "NaN";
        } else if (std::isinf(d)) {
          out += d > 0 ? "Infinity" : "-Infinity";
        } else {
          out += float_repr(d);
        }
        return;
      }
      case Value::Kind::kString:
        append_json_string(out, v.as_string(), options.ensure_ascii);
        return;
      case Value::Kind::kList: {
        const ValueList& items = v.as_list();
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out += item_separator;
          if (options.indent) newline(level + 1);
          write(items[i], level + 1);
        }
        if (options.indent) newline(level);
        out += ']';
        return;
      }
      case Value::Kind::kDict: {
        std::vector<const std::pair<std::string, Value>*> items;
        for (const auto& item : v.as_dict().items()) items.push_back(&item);
        if (items.empty()) {
          out += "{}";
          return;
        }
        if (options.sort_keys) {
          std::stable_sort(items.begin(), items.end(),
                           [](const auto* a, const auto* b) { return a->first < b->first; });
        }
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out += item_separator;
          if (options.indent) newline(level + 1);
          append_json_string(out, items[i]->first, options.ensure_ascii);
          out += key_separator;
          write(items[i]->second, level + 1);
        }
        if (options.indent) newline(level);
        out += '}';
        return;
      }
      case Value::Kind::kUndefined:
      case Value::Kind::kNamespace:
      case Value::Kind::kCallable:
        fail(where, "Object of type " + std::string(v.type_name()) + " is not JSON serializable");
    }
  }
};

Value from_json_at(const nlohmann::ordered_json& json, int depth, SourceLocation where) {
  check_depth(depth, where);
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
    case nlohmann::ordered_json::value_t::discarded:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      // Python's int is unbounded; beyond int64 this keeps the magnitude.
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::floating(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::floating(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json_at(item, depth + 1, where));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict dict;
      for (const auto& [key, item] : json.items())
        dict.set(key, from_json_at(item, depth + 1, where));
      return Value::dict(std::move(dict));
    }
    case nlohmann::ordered_json::value_t::binary:
      break;
  }
  fail(where, "binary JSON values are not supported");
}

}  // namespace

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string sci(buf, ec == std::errc() ? end : buf);
  // sci is "[-]D[.DDD]e[+-]XX": split into sign, digits and exponent.
  size_t pos = 0;
  std::string sign;
  if (!sci.empty() && sci[0] == '-') {
    sign = "-";
    pos = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t i = pos; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exponent = std::stoi(sci.substr(e + 1));
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp_buf;
  }
  const int point = exponent + 1;  // digits before the decimal point
  if (point <= 0) return sign + "0." + std::string(static_cast<size_t>(-point), '0') + digits;
  if (static_cast<size_t>(point) >= digits.size()) {
    return sign + digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
  }
  return sign + digits.substr(0, static_cast<size_t>(point)) + "." +
         digits.substr(static_cast<size_t>(point));
}

std::string string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += quote;
  return out;
}

std::string to_str(const Value& v, SourceLocation where) {
  std::string out;
  append_str(out, v, 0, where);
  return out;
}

std::string repr(const Value& v, SourceLocation where) {
  std::string out;
  append_repr(out, v, 0, where);
  return out;
}

std::string to_json(const Value& v, const JsonDumpOptions& options, SourceLocation where) {
  JsonWriter writer{options,
                    where,
                    options.item_separator.value_or(options.indent ? "," : ", "),
                    options.key_separator.value_or(": "),
                    {}};
  writer.write(v, 0);
  return std::move(writer.out);
}

Value from_json(const nlohmann::ordered_json& json, SourceLocation where) {
  return from_json_at(json, 0, where);
}

}  // namespace dancemoe::jinja
