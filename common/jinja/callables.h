// The callables a template can reach besides its own macros (which the
// interpreter defines): built-in functions (range, namespace, ...; loop.cycle)
// and methods bound to a value (`'a,b'.split`, `d.items`). Immutable;
// shareable between threads.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "common/jinja/call_args.h"
#include "common/jinja/render_state.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

using NativeFn = std::function<Value(RenderState&, const CallArgs&, SourceLocation)>;

class NativeFunction final : public Callable {
 public:
  NativeFunction(std::string name, NativeFn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string_view name() const override { return name_; }
  Value call(RenderState& state, const CallArgs& args, SourceLocation where) const {
    return fn_(state, args, where);
  }

 private:
  std::string name_;
  NativeFn fn_;
};

class BoundMethod final : public Callable {
 public:
  BoundMethod(Value receiver, std::string method)
      : receiver_(std::move(receiver)), method_(std::move(method)) {}
  std::string_view name() const override { return method_; }
  const Value& receiver() const { return receiver_; }
  const std::string& method() const { return method_; }

 private:
  Value receiver_;
  std::string method_;
};

}  // namespace dancemoe::jinja
