#include "common/jinja/access.h"

#include <algorithm>

#include "common/jinja/callables.h"
#include "common/jinja/methods.h"
#include "common/jinja/text.h"
#include "common/jinja/value_format.h"

namespace dancemoe::jinja {
namespace {

std::string object_name(const Value& v) {
  if (v.is_none()) return "None";
  return "'" + std::string(v.type_name()) + " object'";
}

Value missing_attribute(const Value& object, std::string_view name) {
  return Value::undefined(object_name(object) + " has no attribute '" + std::string(name) + "'");
}

bool is_mutating_method(const Value& object, std::string_view name) {
  static constexpr std::string_view kList[] = {"append", "extend",  "insert", "pop",
                                               "remove", "reverse", "sort",   "clear"};
  static constexpr std::string_view kDict[] = {"update", "pop", "popitem", "setdefault", "clear"};
  if (object.is_list() && !object.is_tuple()) {
    return std::find(std::begin(kList), std::end(kList), name) != std::end(kList);
  }
  if (object.is_dict()) {
    return std::find(std::begin(kDict), std::end(kDict), name) != std::end(kDict);
  }
  return false;
}

Value bound(const Value& object, std::string_view name) {
  return Value::callable(std::make_shared<BoundMethod>(object, std::string(name)));
}

// Python's slice.indices(): the start, stop and step over `length` items.
struct SliceRange {
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
};

int64_t bound_value(const Value* v, SourceLocation where) {
  if (!v->is_int() && !v->is_bool()) {
    fail(where, "slice indices must be integers or None, not " + std::string(v->type_name()));
  }
  return v->as_int();
}

SliceRange slice_range(int64_t length, const Value* start, const Value* stop, const Value* step,
                       SourceLocation where) {
  SliceRange r;
  if (step && !step->is_none()) r.step = bound_value(step, where);
  if (r.step == 0) fail(where, "slice step cannot be zero");
  const bool forward = r.step > 0;
  auto clamp = [&](const Value* v, int64_t fallback) {
    if (!v || v->is_none()) return fallback;
    int64_t i = bound_value(v, where);
    if (i < 0) {
      i += length;
      if (i < 0) i = forward ? 0 : -1;
    } else if (i >= length) {
      i = forward ? length : length - 1;
    }
    return i;
  };
  r.start = clamp(start, forward ? 0 : length - 1);
  r.stop = clamp(stop, forward ? length : -1);
  return r;
}

template <typename Fn>
void for_each_index(const SliceRange& r, Fn fn) {
  if (r.step > 0) {
    for (int64_t i = r.start; i < r.stop; i += r.step) fn(i);
  } else {
    for (int64_t i = r.start; i > r.stop; i += r.step) fn(i);
  }
}

}  // namespace

void fail_undefined(const Value& undefined, SourceLocation where) {
  const std::string& hint = undefined.undefined_hint();
  fail(where, hint.empty() ? "a value is undefined" : hint);
}

Value get_attribute(const Value& object, std::string_view name, SourceLocation where) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      fail_undefined(object, where);
    case Value::Kind::kNamespace: {
      const Value* v = object.as_namespace().attributes.find(name);
      return v ? *v : missing_attribute(object, name);
    }
    case Value::Kind::kDict:
      if (has_method(object, name)) return bound(object, name);
      if (is_mutating_method(object, name)) break;
      if (const Value* v = object.as_dict().find(name)) return *v;
      return missing_attribute(object, name);
    case Value::Kind::kString:
    case Value::Kind::kList:
      if (has_method(object, name)) return bound(object, name);
      break;
    default:
      break;
  }
  if (is_mutating_method(object, name)) {
    return Value::undefined("access to attribute '" + std::string(name) + "' of '" +
                            std::string(object.type_name()) + "' object is unsafe");
  }
  return missing_attribute(object, name);
}

Value get_item(const Value& object, const Value& key, SourceLocation where) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      fail_undefined(object, where);
    case Value::Kind::kDict:
      if (key.is_string()) {
        if (const Value* v = object.as_dict().find(key.as_string())) return *v;
        return get_attribute(object, key.as_string(), where);
      }
      return Value::undefined(object_name(object) + " has no element " + repr(key, where));
    case Value::Kind::kList:
    case Value::Kind::kString:
      if (key.is_int() || key.is_bool()) {
        const int64_t length = object.is_list()
                                   ? static_cast<int64_t>(object.as_list().size())
                                   : static_cast<int64_t>(utf8_length(object.as_string()));
        int64_t i = key.as_int();
        if (i < 0) i += length;
        if (i < 0 || i >= length) {
          return Value::undefined(object_name(object) + " has no element " +
                                  std::to_string(key.as_int()));
        }
        if (object.is_list()) return object.as_list()[static_cast<size_t>(i)];
        const std::vector<size_t> offsets = utf8_offsets(object.as_string());
        const size_t k = static_cast<size_t>(i);
        return Value::string(object.as_string().substr(offsets[k], offsets[k + 1] - offsets[k]));
      }
      if (key.is_string()) return get_attribute(object, key.as_string(), where);
      break;
    case Value::Kind::kNamespace:
      if (key.is_string()) return get_attribute(object, key.as_string(), where);
      break;
    default:
      break;
  }
  return Value::undefined(object_name(object) + " has no element " + repr(key, where));
}

Value get_slice(RenderState& state, const Value& object, const Value* start, const Value* stop,
                const Value* step, SourceLocation where) {
  if (object.is_undefined()) fail_undefined(object, where);
  if (object.is_list()) {
    const ValueList& items = object.as_list();
    const SliceRange r = slice_range(static_cast<int64_t>(items.size()), start, stop, step, where);
    ValueList out;
    for_each_index(r, [&](int64_t i) { out.push_back(items[static_cast<size_t>(i)]); });
    state.check_list(out.size(), where);
    return object.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  if (object.is_string()) {
    const std::string& s = object.as_string();
    const std::vector<size_t> offsets = utf8_offsets(s);
    const SliceRange r =
        slice_range(static_cast<int64_t>(offsets.size() - 1), start, stop, step, where);
    std::string out;
    for_each_index(r, [&](int64_t i) {
      const size_t k = static_cast<size_t>(i);
      out.append(s, offsets[k], offsets[k + 1] - offsets[k]);
    });
    state.check_string(out.size(), where);
    return Value::string(std::move(out));
  }
  fail(where, "'" + std::string(object.type_name()) + "' object is not subscriptable");
}

bool contains(const Value& container, const Value& item, SourceLocation where) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        fail(where,
             "'in <string>' requires string as left operand, not " + std::string(item.type_name()));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.as_list()) {
        if (v.equals(item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    default:
      fail(where, "argument of type '" + std::string(container.type_name()) + "' is not iterable");
  }
}

}  // namespace dancemoe::jinja
