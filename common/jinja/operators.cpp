#include "common/jinja/operators.h"

#include <cmath>
#include <cstdio>

#include "common/jinja/access.h"
#include "common/jinja/value_format.h"

namespace dancemoe::jinja {
namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b,
                              SourceLocation where) {
  if (a.is_undefined()) fail_undefined(a, where);
  if (b.is_undefined()) fail_undefined(b, where);
  fail(where, "unsupported operand type(s) for " + std::string(op) + ": '" +
                  std::string(a.type_name()) + "' and '" + std::string(b.type_name()) + "'");
}

template <typename Op>
Value checked(Op op, int64_t a, int64_t b, SourceLocation where) {
  int64_t r = 0;
  if (op(a, b, &r)) fail(where, "integer overflow (beyond 64 bits)");
  return Value::integer(r);
}
bool add(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

Value repeat(RenderState& state, const Value& seq, int64_t n, SourceLocation where) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    const size_t total = s.size() * static_cast<size_t>(n);
    if (n > 0 && total / static_cast<size_t>(n) != s.size())
      fail(where, "repeated string too large");
    state.check_string(total, where);
    std::string out;
    out.reserve(total);
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value::string(std::move(out));
  }
  const ValueList& items = seq.as_list();
  const size_t total = items.size() * static_cast<size_t>(n);
  if (n > 0 && total / static_cast<size_t>(n) != items.size())
    fail(where, "repeated list too large");
  state.check_list(total, where);
  ValueList out;
  out.reserve(total);
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return seq.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

double python_fmod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// str % args: the conversions templates use.
Value format_percent(RenderState& state, const std::string& fmt, const Value& args,
                     SourceLocation where) {
  ValueList values = args.is_tuple() ? args.as_list() : ValueList{args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) fail(where, "incomplete format");
    const char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) fail(where, "not enough arguments for format string");
    const Value& v = values[next++];
    if (conv == 's') {
      out += to_str(v, where);
    } else if (conv == 'r') {
      out += repr(v, where);
    } else if (conv == 'd' || conv == 'i') {
      if (!v.is_number()) fail(where, "%d format: a number is required");
      out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int());
    } else if (conv == 'f') {
      if (!v.is_number()) fail(where, "%f format: a number is required");
      char buf[64];
      std::snprintf(buf, sizeof buf, "%f", v.as_double());
      out += buf;
    } else {
      fail(where, std::string("unsupported format character '") + conv + "'");
    }
    state.check_string(out.size(), where);
  }
  if (next < values.size()) fail(where, "not all arguments converted during string formatting");
  return Value::string(std::move(out));
}

int order(const Value& a, const Value& b, std::string_view op, SourceLocation where) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double();
      const double y = b.as_double();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());  // UTF-8 bytes order as code points
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!x[i].equals(y[i])) return order(x[i], y[i], op, where);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  if (a.is_undefined()) fail_undefined(a, where);
  if (b.is_undefined()) fail_undefined(b, where);
  fail(where, "'" + std::string(op) + "' not supported between instances of '" +
                  std::string(a.type_name()) + "' and '" + std::string(b.type_name()) + "'");
}

}  // namespace

Value binary_operator(RenderState& state, std::string_view op, const Value& a, const Value& b,
                      SourceLocation where) {
  const bool numbers = a.is_number() && b.is_number();
  const bool floats = numbers && (a.is_float() || b.is_float());
  if (op == "+") {
    if (numbers) {
      if (floats) return Value::floating(a.as_double() + b.as_double());
      return checked(add, a.as_int(), b.as_int(), where);
    }
    if (a.is_string() && b.is_string()) {
      state.check_string(a.as_string().size() + b.as_string().size(), where);
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      state.check_list(a.as_list().size() + b.as_list().size(), where);
      ValueList out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return a.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    unsupported(op, a, b, where);
  }
  if (op == "*") {
    if (numbers) {
      if (floats) return Value::floating(a.as_double() * b.as_double());
      return checked(mul, a.as_int(), b.as_int(), where);
    }
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool()))
      return repeat(state, a, b.as_int(), where);
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool()))
      return repeat(state, b, a.as_int(), where);
    unsupported(op, a, b, where);
  }
  if (op == "%" && a.is_string()) return format_percent(state, a.as_string(), b, where);
  if (!numbers) unsupported(op, a, b, where);
  if (op == "-") {
    if (floats) return Value::floating(a.as_double() - b.as_double());
    return checked(sub, a.as_int(), b.as_int(), where);
  }
  if (op == "/") {
    if (b.as_double() == 0) fail(where, "division by zero");
    return Value::floating(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (b.as_double() == 0) fail(where, op == "%" ? "modulo by zero" : "division by zero");
    if (floats) {
      const double x = a.as_double();
      const double y = b.as_double();
      return Value::floating(op == "%" ? python_fmod(x, y) : std::floor(x / y));
    }
    const int64_t x = a.as_int();
    const int64_t y = b.as_int();
    if (x == INT64_MIN && y == -1) fail(where, "integer overflow (beyond 64 bits)");
    int64_t q = x / y;
    int64_t m = x % y;
    if (m != 0 && ((m < 0) != (y < 0))) {
      --q;
      m += y;
    }
    return Value::integer(op == "%" ? m : q);
  }
  if (op == "**") {
    if (!floats && b.as_int() >= 0) {
      int64_t base = a.as_int();
      int64_t exp = b.as_int();
      int64_t result = 1;
      while (exp > 0) {
        if ((exp & 1) && __builtin_mul_overflow(result, base, &result)) {
          fail(where, "integer overflow (beyond 64 bits)");
        }
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base)) {
          fail(where, "integer overflow (beyond 64 bits)");
        }
      }
      return Value::integer(result);
    }
    return Value::floating(std::pow(a.as_double(), b.as_double()));
  }
  fail(where, "unknown operator '" + std::string(op) + "'");
}

Value unary_operator(std::string_view op, const Value& v, SourceLocation where) {
  if (v.is_undefined()) fail_undefined(v, where);
  if (!v.is_number()) {
    fail(where, "bad operand type for unary " + std::string(op) + ": '" +
                    std::string(v.type_name()) + "'");
  }
  if (op == "+") return v.is_bool() ? Value::integer(v.as_int()) : v;
  if (v.is_float()) return Value::floating(-v.as_double());
  if (v.as_int() == INT64_MIN) fail(where, "integer overflow (beyond 64 bits)");
  return Value::integer(-v.as_int());
}

bool compare(std::string_view op, const Value& a, const Value& b, SourceLocation where) {
  if (op == "==") return a.equals(b);
  if (op == "!=") return !a.equals(b);
  const int c = order(a, b, op, where);
  if (op == "<") return c < 0;
  if (op == ">") return c > 0;
  if (op == "<=") return c <= 0;
  return c >= 0;
}

}  // namespace dancemoe::jinja
