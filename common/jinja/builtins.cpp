#include "common/jinja/builtins.h"

#include <algorithm>
#include <ctime>
#include <memory>

#include "common/jinja/callables.h"

namespace dancemoe::jinja {
namespace {

Value range(RenderState& state, const CallArgs& args, SourceLocation where) {
  if (!args.keywords.empty()) fail(where, "range() takes no keyword arguments");
  std::vector<int64_t> n;
  for (const Value& v : args.positional) {
    if (!v.is_int() && !v.is_bool()) {
      fail(where, "range(): '" + std::string(v.type_name()) + "' object cannot be an integer");
    }
    n.push_back(v.as_int());
  }
  if (n.empty() || n.size() > 3) fail(where, "range() takes 1 to 3 arguments");
  const int64_t start = n.size() == 1 ? 0 : n[0];
  const int64_t stop = n.size() == 1 ? n[0] : n[1];
  const int64_t step = n.size() == 3 ? n[2] : 1;
  if (step == 0) fail(where, "range() arg 3 must not be zero");
  // Count first (in floating point, which cannot overflow), so that a huge
  // range fails before it is built; a range that passes is small enough for
  // exact 64-bit arithmetic.
  const double approx =
      (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step);
  state.check_list(approx > 0 ? static_cast<size_t>(std::min(approx, 1e18)) : 0, where);
  const int64_t span = step > 0 ? stop - start : start - stop;
  const int64_t magnitude = step > 0 ? step : -step;
  const uint64_t count = span <= 0 ? 0 : static_cast<uint64_t>((span - 1) / magnitude + 1);
  ValueList out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i)
    out.push_back(Value::integer(start + static_cast<int64_t>(i) * step));
  return Value::list(std::move(out));
}

Value make_namespace(RenderState& state, const CallArgs& args, SourceLocation where) {
  std::shared_ptr<Namespace> ns = state.new_namespace();
  if (args.positional.size() > 1) fail(where, "namespace() takes at most one positional argument");
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (!init.is_dict()) fail(where, "namespace() argument must be a dict");
    for (const auto& [key, value] : init.as_dict().items()) ns->attributes.set(key, value);
  }
  for (const auto& [key, value] : args.keywords) ns->attributes.set(key, value);
  return Value::ns(std::move(ns));
}

Value make_dict(RenderState&, const CallArgs& args, SourceLocation where) {
  if (!args.positional.empty()) fail(where, "dict() takes only keyword arguments here");
  ValueDict d;
  for (const auto& [key, value] : args.keywords) d.set(key, value);
  return Value::dict(std::move(d));
}

Value raise_exception(RenderState&, const CallArgs& args, SourceLocation where) {
  std::string message = "raise_exception() called";
  if (!args.positional.empty() && args.positional[0].is_string())
    message = args.positional[0].as_string();
  throw TemplateError(where, message, /*raised=*/true);
}

Value strftime_now(RenderState& state, const CallArgs& args, SourceLocation where) {
  ArgReader a(args, "strftime_now", {"format"}, where);
  const Value& format = a.required(0);
  if (!format.is_string()) fail(where, "strftime_now(): format must be a string");
  if (format.as_string().size() > 256) fail(where, "strftime_now(): format longer than 256 bytes");
  const std::time_t t = std::chrono::system_clock::to_time_t(state.now());
  std::tm local{};
  localtime_r(&t, &local);
  char buf[1024];
  const size_t n = std::strftime(buf, sizeof buf, format.as_string().c_str(), &local);
  return Value::string(std::string(buf, n));
}

Value native(const char* name, NativeFn fn) {
  return Value::callable(std::make_shared<NativeFunction>(name, std::move(fn)));
}

}  // namespace

std::optional<Value> builtin_global(std::string_view name) {
  static const Value kRange = native("range", range);
  static const Value kNamespace = native("namespace", make_namespace);
  static const Value kDict = native("dict", make_dict);
  static const Value kRaise = native("raise_exception", raise_exception);
  static const Value kStrftime = native("strftime_now", strftime_now);
  if (name == "range") return kRange;
  if (name == "namespace") return kNamespace;
  if (name == "dict") return kDict;
  if (name == "raise_exception") return kRaise;
  if (name == "strftime_now") return kStrftime;
  return std::nullopt;
}

}  // namespace dancemoe::jinja
