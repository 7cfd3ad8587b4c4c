// CallArgs: the arguments of a call, filter or test; ArgReader binds them
// to a built-in's parameters as Python binds a call (positionally, then by
// name), refusing extra positional arguments, unknown names and a parameter
// given twice, with the function's name in the error.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/jinja/template_error.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

class ArgReader {
 public:
  ArgReader(const CallArgs& args, std::string_view function,
            std::initializer_list<std::string_view> params, SourceLocation where);

  // The argument bound to parameter `index`, or nullptr.
  const Value* get(size_t index) const { return bound_[index]; }
  Value value_or(size_t index, Value fallback) const;
  // Typed access; absent -> fallback; a wrong type fails naming the parameter.
  std::optional<std::string> string_or_none(size_t index) const;
  std::string string_or(size_t index, std::string fallback) const;
  int64_t int_or(size_t index, int64_t fallback) const;
  bool bool_or(size_t index, bool fallback) const;
  // Fails unless parameter `index` was given.
  const Value& required(size_t index) const;

 private:
  [[noreturn]] void wrong_type(size_t index, const char* expected) const;

  std::string function_;
  std::vector<std::string_view> params_;
  std::vector<const Value*> bound_;
  SourceLocation where_;
};

}  // namespace dancemoe::jinja
