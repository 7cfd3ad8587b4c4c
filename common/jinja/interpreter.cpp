#include "common/jinja/interpreter.h"

#include <memory>
#include <utility>

#include "common/jinja/access.h"
#include "common/jinja/builtins.h"
#include "common/jinja/callables.h"
#include "common/jinja/filters.h"
#include "common/jinja/is_tests.h"
#include "common/jinja/methods.h"
#include "common/jinja/operators.h"
#include "common/jinja/text.h"
#include "common/jinja/value_format.h"

namespace dancemoe::jinja {
namespace {

struct Frame {
  ValueDict vars;
  std::shared_ptr<Frame> parent;
};
using FramePtr = std::shared_ptr<Frame>;

FramePtr child_of(const FramePtr& parent) {
  auto frame = std::make_shared<Frame>();
  frame->parent = parent;
  return frame;
}

// A macro keeps a weak reference to the scope that defined it: that scope
// holds the macro, so a strong one would be a reference cycle (a leak).
class Macro final : public Callable {
 public:
  Macro(const Stmt& def, std::weak_ptr<Frame> closure) : def_(&def), closure_(std::move(closure)) {}
  std::string_view name() const override { return def_->name; }
  const Stmt& def() const { return *def_; }
  FramePtr closure() const { return closure_.lock(); }

 private:
  const Stmt* def_;
  std::weak_ptr<Frame> closure_;
};

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  Interpreter(const ValueDict& variables, RenderState& state)
      : variables_(variables), state_(state) {}

  std::string run(const Body& body) {
    FramePtr root = std::make_shared<Frame>();
    exec_body(body, root);
    return std::move(out_);
  }

 private:
  class CallDepth {
   public:
    CallDepth(Interpreter& in, SourceLocation where) : in_(in) {
      if (++in_.call_depth_ > in_.state_.limits().max_call_depth) {
        fail(where, "macro calls nested deeper than " +
                        std::to_string(in_.state_.limits().max_call_depth) +
                        " (endless recursion?)");
      }
    }
    ~CallDepth() { --in_.call_depth_; }
    CallDepth(const CallDepth&) = delete;
    CallDepth& operator=(const CallDepth&) = delete;

   private:
    Interpreter& in_;
  };

  void emit(std::string_view text, SourceLocation where) {
    if (out_.size() + text.size() > state_.limits().max_output_bytes) {
      fail(where, "template output over the render's limit of " +
                      std::to_string(state_.limits().max_output_bytes) + " bytes");
    }
    out_ += text;
  }

  // Renders `body` into a string of its own (macros, set blocks).
  std::string capture(const Body& body, const FramePtr& frame, Flow* flow) {
    std::string saved = std::exchange(out_, std::string());
    *flow = exec_body(body, frame);
    return std::exchange(out_, std::move(saved));
  }

  Value lookup(const std::string& name, const FramePtr& frame, SourceLocation where) {
    for (const Frame* f = frame.get(); f != nullptr; f = f->parent.get()) {
      if (const Value* v = f->vars.find(name)) return *v;
    }
    if (const Value* v = variables_.find(name)) return *v;
    if (std::optional<Value> builtin = builtin_global(name)) return *builtin;
    (void)where;
    return Value::undefined("'" + name + "' is undefined");
  }

  // ---- statements -------------------------------------------------------------

  Flow exec_body(const Body& body, const FramePtr& frame) {
    for (const StmtPtr& s : body) {
      const Flow flow = exec(*s, frame);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Flow exec(const Stmt& s, const FramePtr& frame) {
    state_.step(s.where);
    switch (s.kind) {
      case Stmt::Kind::kText:
        emit(s.text, s.where);
        return Flow::kNormal;
      case Stmt::Kind::kOutput: {
        const Value v = eval(*s.expr, frame);
        emit(to_str(v, s.where), s.where);
        return Flow::kNormal;
      }
      case Stmt::Kind::kIf:
        for (size_t i = 0; i < s.conditions.size(); ++i) {
          if (eval(*s.conditions[i], frame).truthy()) return exec_body(s.bodies[i], frame);
        }
        return exec_body(s.else_body, frame);
      case Stmt::Kind::kFor:
        return exec_for(s, frame);
      case Stmt::Kind::kSet:
        exec_set(s, frame);
        return Flow::kNormal;
      case Stmt::Kind::kSetBlock: {
        Flow flow = Flow::kNormal;
        Value v = Value::string(capture(s.body, frame, &flow));
        for (const ExprPtr& f : s.filters)
          v = apply_filter(state_, f->name, v, call_args(*f, 1, frame), f->where);
        frame->vars.set(s.targets[0], std::move(v));
        return flow;
      }
      case Stmt::Kind::kMacro:
        frame->vars.set(s.name, Value::callable(std::make_shared<Macro>(s, frame)));
        return Flow::kNormal;
      case Stmt::Kind::kBreak:
        return Flow::kBreak;
      case Stmt::Kind::kContinue:
        return Flow::kContinue;
      case Stmt::Kind::kScope: {
        FramePtr scope = child_of(frame);
        for (size_t i = 0; i < s.targets.size(); ++i)
          scope->vars.set(s.targets[i], eval(*s.values[i], scope));
        return exec_body(s.body, scope);
      }
    }
    return Flow::kNormal;
  }

  ValueList iterate(const Value& v, SourceLocation where) {
    switch (v.kind()) {
      case Value::Kind::kUndefined:
        return {};
      case Value::Kind::kList:
        return v.as_list();
      case Value::Kind::kDict: {
        ValueList keys;
        for (const auto& [key, value] : v.as_dict().items()) keys.push_back(Value::string(key));
        return keys;
      }
      case Value::Kind::kString: {
        ValueList chars;
        const std::string& s = v.as_string();
        const std::vector<size_t> offsets = utf8_offsets(s);
        for (size_t k = 0; k + 1 < offsets.size(); ++k) {
          chars.push_back(Value::string(s.substr(offsets[k], offsets[k + 1] - offsets[k])));
        }
        return chars;
      }
      default:
        fail(where, "'" + std::string(v.type_name()) + "' object is not iterable");
    }
  }

  void bind(const std::vector<std::string>& targets, const Value& v, Frame& frame,
            SourceLocation where) {
    if (targets.size() == 1) {
      frame.vars.set(targets[0], v);
      return;
    }
    const ValueList parts = v.is_list() || v.is_string() ? iterate(v, where) : ValueList{};
    if (!v.is_list() && !v.is_string()) {
      fail(where, "cannot unpack non-iterable " + std::string(v.type_name()) + " object");
    }
    if (parts.size() != targets.size()) {
      fail(where, std::string(parts.size() < targets.size() ? "not enough" : "too many") +
                      " values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                      std::to_string(parts.size()) + ")");
    }
    for (size_t i = 0; i < targets.size(); ++i) frame.vars.set(targets[i], parts[i]);
  }

  Value loop_value(const ValueList& items, size_t i) {
    const int64_t n = static_cast<int64_t>(items.size());
    const int64_t index = static_cast<int64_t>(i);
    ValueDict loop;
    loop.set("index0", Value::integer(index));
    loop.set("index", Value::integer(index + 1));
    loop.set("revindex0", Value::integer(n - index - 1));
    loop.set("revindex", Value::integer(n - index));
    loop.set("first", Value::boolean(i == 0));
    loop.set("last", Value::boolean(index == n - 1));
    loop.set("length", Value::integer(n));
    loop.set("depth", Value::integer(1));
    loop.set("depth0", Value::integer(0));
    if (i > 0) loop.set("previtem", items[i - 1]);
    if (index + 1 < n) loop.set("nextitem", items[i + 1]);
    loop.set("cycle",
             Value::callable(std::make_shared<NativeFunction>(
                 "loop.cycle", [i](RenderState&, const CallArgs& args, SourceLocation where) {
                   if (args.positional.empty())
                     fail(where, "loop.cycle() needs at least one value");
                   return args.positional[i % args.positional.size()];
                 })));
    return Value::dict(std::move(loop));
  }

  Flow exec_for(const Stmt& s, const FramePtr& frame) {
    ValueList items = iterate(eval(*s.expr, frame), s.where);
    if (s.condition) {
      ValueList kept;
      for (Value& item : items) {
        state_.step(s.where);
        FramePtr probe = child_of(frame);
        bind(s.targets, item, *probe, s.where);
        if (eval(*s.condition, probe).truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec_body(s.else_body, frame);
    for (size_t i = 0; i < items.size(); ++i) {
      state_.step(s.where);
      FramePtr iteration = child_of(frame);  // fresh each time, as jinja2's
      bind(s.targets, items[i], *iteration, s.where);
      iteration->vars.set("loop", loop_value(items, i));
      if (exec_body(s.body, iteration) == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  void exec_set(const Stmt& s, const FramePtr& frame) {
    Value v = eval(*s.expr, frame);
    if (!s.attribute.empty()) {
      const Value target = lookup(s.targets[0], frame, s.where);
      if (!target.is_namespace()) {
        fail(s.where, "cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
      }
      target.as_namespace().attributes.set(s.attribute, std::move(v));
      return;
    }
    bind(s.targets, v, *frame, s.where);
  }

  // ---- expressions ------------------------------------------------------------

  CallArgs call_args(const Expr& e, size_t first, const FramePtr& frame) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i)
      args.positional.push_back(eval(*e.args[i], frame));
    for (const auto& [name, value] : e.keywords)
      args.keywords.emplace_back(name, eval(*value, frame));
    return args;
  }

  Value call(const Value& callee, const CallArgs& args, SourceLocation where) {
    if (callee.is_undefined()) fail_undefined(callee, where);
    if (!callee.is_callable())
      fail(where, "'" + std::string(callee.type_name()) + "' object is not callable");
    const Callable* fn = callee.as_callable().get();
    if (const auto* native = dynamic_cast<const NativeFunction*>(fn))
      return native->call(state_, args, where);
    if (const auto* method = dynamic_cast<const BoundMethod*>(fn)) {
      return call_method(state_, method->receiver(), method->method(), args, where);
    }
    return call_macro(dynamic_cast<const Macro&>(*fn), args, where);
  }

  Value call_macro(const Macro& macro, const CallArgs& args, SourceLocation where) {
    CallDepth depth(*this, where);
    const Stmt& def = macro.def();
    FramePtr closure = macro.closure();
    if (!closure)
      fail(where, "macro '" + def.name + "' called after the scope that defined it ended");
    if (args.positional.size() > def.params.size()) {
      fail(where, "macro '" + def.name + "' takes not more than " +
                      std::to_string(def.params.size()) + " argument(s)");
    }
    FramePtr frame = child_of(closure);
    std::vector<const Value*> bound(def.params.size(), nullptr);
    for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = &args.positional[i];
    for (const auto& [name, value] : args.keywords) {
      size_t i = 0;
      while (i < def.params.size() && def.params[i].name != name) ++i;
      if (i == def.params.size())
        fail(where, "macro '" + def.name + "' has no argument named '" + name + "'");
      if (bound[i])
        fail(where, "macro '" + def.name + "' got multiple values for argument '" + name + "'");
      bound[i] = &value;
    }
    for (size_t i = 0; i < def.params.size(); ++i) {
      const MacroParam& p = def.params[i];
      if (bound[i]) {
        frame->vars.set(p.name, *bound[i]);
      } else if (p.default_value) {
        frame->vars.set(p.name, eval(*p.default_value, frame));
      } else {
        frame->vars.set(p.name, Value::undefined("parameter '" + p.name + "' was not provided"));
      }
    }
    frame->vars.set("varargs", Value::tuple({}));
    frame->vars.set("kwargs", Value::dict({}));
    Flow flow = Flow::kNormal;
    return Value::string(capture(def.body, frame, &flow));
  }

  Value built(Value v, SourceLocation where) {
    if (v.depth() > kMaxValueDepth) {
      fail(where, "value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
    }
    return v;
  }

  Value eval(const Expr& e, const FramePtr& frame) {
    state_.step(e.where);
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.literal;
      case Expr::Kind::kName:
        return lookup(e.name, frame, e.where);
      case Expr::Kind::kAttribute:
        return get_attribute(eval(*e.args[0], frame), e.name, e.where);
      case Expr::Kind::kItem:
        return get_item(eval(*e.args[0], frame), eval(*e.args[1], frame), e.where);
      case Expr::Kind::kSlice: {
        const Value object = eval(*e.args[0], frame);
        Value bounds[3];
        const Value* ptrs[3] = {nullptr, nullptr, nullptr};
        for (size_t i = 0; i < 3; ++i) {
          if (e.args[i + 1]) {
            bounds[i] = eval(*e.args[i + 1], frame);
            ptrs[i] = &bounds[i];
          }
        }
        return get_slice(state_, object, ptrs[0], ptrs[1], ptrs[2], e.where);
      }
      case Expr::Kind::kCall: {
        const Value callee = eval(*e.args[0], frame);
        return call(callee, call_args(e, 1, frame), e.where);
      }
      case Expr::Kind::kFilter: {
        const Value subject = eval(*e.args[0], frame);
        return apply_filter(state_, e.name, subject, call_args(e, 1, frame), e.where);
      }
      case Expr::Kind::kTest: {
        const Value subject = eval(*e.args[0], frame);
        const bool passed = apply_test(state_, e.name, subject, call_args(e, 1, frame), e.where);
        return Value::boolean(passed != e.negated);
      }
      case Expr::Kind::kUnary: {
        const Value v = eval(*e.args[0], frame);
        if (e.name == "not") return Value::boolean(!v.truthy());
        return unary_operator(e.name, v, e.where);
      }
      case Expr::Kind::kBinary: {
        Value left = eval(*e.args[0], frame);
        if (e.name == "and") return left.truthy() ? eval(*e.args[1], frame) : left;
        if (e.name == "or") return left.truthy() ? left : eval(*e.args[1], frame);
        return binary_operator(state_, e.name, left, eval(*e.args[1], frame), e.where);
      }
      case Expr::Kind::kConcat: {
        std::string out;
        for (const ExprPtr& part : e.args) {
          out += to_str(eval(*part, frame), e.where);
          state_.check_string(out.size(), e.where);
        }
        return Value::string(std::move(out));
      }
      case Expr::Kind::kCompare: {
        Value left = eval(*e.args[0], frame);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1], frame);
          const std::string& op = e.ops[i];
          bool holds = false;
          if (op == "in" || op == "notin") {
            holds = contains(right, left, e.where) == (op == "in");
          } else {
            holds = compare(op, left, right, e.where);
          }
          if (!holds) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case Expr::Kind::kCondition:
        if (eval(*e.args[1], frame).truthy()) return eval(*e.args[0], frame);
        return e.args[2] ? eval(*e.args[2], frame)
                         : Value::undefined("the condition was false and there is no else");
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        state_.check_list(e.args.size(), e.where);
        ValueList items;
        items.reserve(e.args.size());
        for (const ExprPtr& item : e.args) items.push_back(eval(*item, frame));
        return built(e.kind == Expr::Kind::kList ? Value::list(std::move(items))
                                                 : Value::tuple(std::move(items)),
                     e.where);
      }
      case Expr::Kind::kDict: {
        ValueDict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value key = eval(*e.args[i], frame);
          if (!key.is_string())
            fail(e.args[i]->where,
                 "dict keys must be strings, not " + std::string(key.type_name()));
          d.set(key.as_string(), eval(*e.args[i + 1], frame));
        }
        return built(Value::dict(std::move(d)), e.where);
      }
    }
    fail(e.where, "unknown expression");
  }

  const ValueDict& variables_;
  RenderState& state_;
  std::string out_;
  int call_depth_ = 0;
};

}  // namespace

std::string interpret(const Body& body, const ValueDict& variables, RenderState& state) {
  return Interpreter(variables, state).run(body);
}

}  // namespace dancemoe::jinja
