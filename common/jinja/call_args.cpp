#include "common/jinja/call_args.h"

namespace dancemoe::jinja {

ArgReader::ArgReader(const CallArgs& args, std::string_view function,
                     std::initializer_list<std::string_view> params, SourceLocation where)
    : function_(function), params_(params), bound_(params.size(), nullptr), where_(where) {
  if (args.positional.size() > params_.size()) {
    fail(where, function_ + "() takes at most " + std::to_string(params_.size()) + " arguments (" +
                    std::to_string(args.positional.size()) + " given)");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [name, value] : args.keywords) {
    size_t i = 0;
    while (i < params_.size() && params_[i] != name) ++i;
    if (i == params_.size()) {
      fail(where, function_ + "() got an unexpected keyword argument '" + name + "'");
    }
    if (bound_[i] != nullptr) {
      fail(where, function_ + "() got multiple values for argument '" + name + "'");
    }
    bound_[i] = &value;
  }
}

Value ArgReader::value_or(size_t index, Value fallback) const {
  return bound_[index] ? *bound_[index] : std::move(fallback);
}

std::optional<std::string> ArgReader::string_or_none(size_t index) const {
  const Value* v = bound_[index];
  if (v == nullptr || v->is_none()) return std::nullopt;
  if (!v->is_string()) wrong_type(index, "a string");
  return v->as_string();
}

std::string ArgReader::string_or(size_t index, std::string fallback) const {
  std::optional<std::string> s = string_or_none(index);
  return s ? std::move(*s) : std::move(fallback);
}

int64_t ArgReader::int_or(size_t index, int64_t fallback) const {
  const Value* v = bound_[index];
  if (v == nullptr || v->is_none()) return fallback;
  if (!v->is_int() && !v->is_bool()) wrong_type(index, "an integer");
  return v->as_int();
}

bool ArgReader::bool_or(size_t index, bool fallback) const {
  const Value* v = bound_[index];
  return v == nullptr ? fallback : v->truthy();
}

const Value& ArgReader::required(size_t index) const {
  if (bound_[index] == nullptr) {
    fail(where_, function_ + "() missing required argument '" + std::string(params_[index]) + "'");
  }
  return *bound_[index];
}

void ArgReader::wrong_type(size_t index, const char* expected) const {
  fail(where_, function_ + "(): argument '" + std::string(params_[index]) + "' must be " +
                   expected + ", not " + std::string(bound_[index]->type_name()));
}

}  // namespace dancemoe::jinja
