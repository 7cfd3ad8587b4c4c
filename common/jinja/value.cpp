#include "common/jinja/value.h"

#include <algorithm>

#include "common/base/check.h"

namespace dancemoe::jinja {

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& [k, v] : items_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void ValueDict::set(std::string key, Value value) {
  for (auto& [k, v] : items_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
  return Value(Kind::kUndefined, std::make_shared<const std::string>(std::move(hint)));
}
Value Value::none() { return Value(Kind::kNone, std::monostate{}); }
Value Value::boolean(bool b) { return Value(Kind::kBool, b); }
Value Value::integer(int64_t i) { return Value(Kind::kInt, i); }
Value Value::floating(double d) { return Value(Kind::kFloat, d); }
Value Value::string(std::string s) {
  return Value(Kind::kString, std::make_shared<const std::string>(std::move(s)));
}
Value Value::list(ValueList items) {
  int depth = 0;
  for (const Value& item : items) depth = std::max(depth, item.depth_);
  Value v(Kind::kList, std::make_shared<const ValueList>(std::move(items)));
  v.depth_ = depth + 1;
  return v;
}
Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.tuple_ = true;
  return v;
}
Value Value::dict(ValueDict items) {
  int depth = 0;
  for (const auto& [key, item] : items.items()) depth = std::max(depth, item.depth_);
  Value v(Kind::kDict, std::make_shared<const ValueDict>(std::move(items)));
  v.depth_ = depth + 1;
  return v;
}
Value Value::ns(std::shared_ptr<Namespace> ns) { return Value(Kind::kNamespace, std::move(ns)); }
Value Value::callable(std::shared_ptr<const Callable> fn) {
  return Value(Kind::kCallable, std::move(fn));
}

bool Value::as_bool() const {
  DMOE_CHECK(kind_ == Kind::kBool);
  return std::get<bool>(payload_);
}

int64_t Value::as_int() const {
  if (kind_ == Kind::kBool) return std::get<bool>(payload_) ? 1 : 0;
  DMOE_CHECK(kind_ == Kind::kInt);
  return std::get<int64_t>(payload_);
}

double Value::as_double() const {
  if (kind_ == Kind::kFloat) return std::get<double>(payload_);
  return static_cast<double>(as_int());
}

const std::string& Value::as_string() const {
  DMOE_CHECK(kind_ == Kind::kString);
  return *std::get<std::shared_ptr<const std::string>>(payload_);
}

const ValueList& Value::as_list() const {
  DMOE_CHECK(kind_ == Kind::kList);
  return *std::get<std::shared_ptr<const ValueList>>(payload_);
}

const ValueDict& Value::as_dict() const {
  DMOE_CHECK(kind_ == Kind::kDict);
  return *std::get<std::shared_ptr<const ValueDict>>(payload_);
}

Namespace& Value::as_namespace() const {
  DMOE_CHECK(kind_ == Kind::kNamespace);
  return *std::get<std::shared_ptr<Namespace>>(payload_);
}

const std::shared_ptr<const Callable>& Value::as_callable() const {
  DMOE_CHECK(kind_ == Kind::kCallable);
  return std::get<std::shared_ptr<const Callable>>(payload_);
}

const std::string& Value::undefined_hint() const {
  static const std::string kEmpty;
  DMOE_CHECK(kind_ == Kind::kUndefined);
  const auto* hint = std::get_if<std::shared_ptr<const std::string>>(&payload_);
  return hint && *hint ? **hint : kEmpty;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_double() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kList:
      return !as_list().empty();
    case Kind::kDict:
      return !as_dict().empty();
    case Kind::kNamespace:
    case Kind::kCallable:
      return true;
  }
  return false;
}

bool Value::equals(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (is_float() || other.is_float()) return as_double() == other.as_double();
    return as_int() == other.as_int();
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return as_string() == other.as_string();
    case Kind::kList: {
      // Python: a tuple never equals a list.
      if (tuple_ != other.tuple_) return false;
      const ValueList& a = as_list();
      const ValueList& b = other.as_list();
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!a[i].equals(b[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const ValueDict& a = as_dict();
      const ValueDict& b = other.as_dict();
      if (a.size() != b.size()) return false;
      for (const auto& [key, value] : a.items()) {
        const Value* match = b.find(key);
        if (match == nullptr || !value.equals(*match)) return false;
      }
      return true;
    }
    case Kind::kNamespace:
      return &as_namespace() == &other.as_namespace();
    case Kind::kCallable:
      return as_callable() == other.as_callable();
    default:
      return false;
  }
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return tuple_ ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

}  // namespace dancemoe::jinja
