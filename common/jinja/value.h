// Value: what a Jinja expression evaluates to. Chat templates are written
// for Python's jinja2 as HuggingFace transformers sets it up, so a Value
// models the Python objects they see -- None, bool, int, float, str, list,
// tuple, dict (insertion-ordered), jinja2's Undefined and namespace, and
// callables (macros, built-in functions, bound methods) -- with Python's
// truthiness, equality, str() and repr() (value_format.h).
//
// Strings are UTF-8; indexing, slicing and length count code points, as
// Python's str does. Lists and dicts are immutable once built (HF renders in
// an ImmutableSandboxedEnvironment: `list.append` is refused there too), so
// copies share them; a namespace is the one mutable object (`set ns.x = v`).
//
// Values are cheap to copy (scalars, or a shared pointer). Not thread-safe to
// mutate a namespace concurrently; a render owns its values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dancemoe::jinja {

// The deepest list/dict nesting a render may build or read (JSON inputs
// included).
inline constexpr int kMaxValueDepth = 128;

class Value;
using ValueList = std::vector<Value>;

// A dict with string keys in insertion order (Python's dict order).
class ValueDict {
 public:
  const Value* find(std::string_view key) const;
  // Replaces the value of an existing key in place, else appends.
  void set(std::string key, Value value);
  // Defined below Value: the standard library may need it complete here.
  size_t size() const;
  bool empty() const;
  const std::vector<std::pair<std::string, Value>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, Value>> items_;
};

// jinja2's namespace(): the only object a template may mutate.
struct Namespace {
  ValueDict attributes;
};

// Macros, built-in functions and bound methods; the interpreter knows the
// concrete kinds (interpreter.cpp).
class Callable {
 public:
  virtual ~Callable() = default;
  virtual std::string_view name() const = 0;
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,  // also a tuple (is_tuple())
    kDict,
    kNamespace,
    kCallable,
  };

  Value() = default;  // undefined
  static Value undefined(std::string hint = "");
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double d);
  static Value string(std::string s);
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(ValueDict items);
  static Value ns(std::shared_ptr<Namespace> ns);
  static Value callable(std::shared_ptr<const Callable> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  // int, float or bool (Python's bool is an int).
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_tuple() const { return kind_ == Kind::kList && tuple_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  // Accessors; calling one for another kind is a programmer error.
  bool as_bool() const;
  int64_t as_int() const;    // int or bool
  double as_double() const;  // int, float or bool
  const std::string& as_string() const;
  const ValueList& as_list() const;
  const ValueDict& as_dict() const;
  Namespace& as_namespace() const;
  const std::shared_ptr<const Callable>& as_callable() const;
  // For an undefined value: what was looked up ("'x'", "attribute 'content'").
  const std::string& undefined_hint() const;

  // Nesting depth: 0 for scalars, 1 + the deepest element for a list or
  // dict. Bounded by the interpreter (kMaxValueDepth) so that the recursive
  // functions over values (equality, repr, JSON) cannot exhaust the stack.
  int depth() const { return depth_; }

  // Python's bool(value).
  bool truthy() const;
  // Python's ==, deep for lists and dicts; 1 == 1.0 == True. Undefined
  // equals only undefined, as jinja2's Undefined does.
  bool equals(const Value& other) const;
  // Python's type name ("str", "dict", "NoneType", "Undefined"), for errors.
  std::string_view type_name() const;

 private:
  using Payload =
      std::variant<std::monostate, bool, int64_t, double, std::shared_ptr<const std::string>,
                   std::shared_ptr<const ValueList>, std::shared_ptr<const ValueDict>,
                   std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>;
  Value(Kind kind, Payload payload) : kind_(kind), payload_(std::move(payload)) {}

  Kind kind_ = Kind::kUndefined;
  bool tuple_ = false;
  int depth_ = 0;
  Payload payload_;
};

inline size_t ValueDict::size() const { return items_.size(); }
inline bool ValueDict::empty() const { return items_.empty(); }

}  // namespace dancemoe::jinja
