// The syntax tree of a parsed template (parser.h builds it, interpreter.h
// runs it). Two node types, each a tagged struct whose children are read
// according to its kind (documented per kind below); the tree owns its
// children. Immutable after parsing; shared by concurrent renders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/jinja/template_error.h"
#include "common/jinja/value.h"

namespace dancemoe::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // literal
    kName,       // name
    kAttribute,  // args[0].name
    kItem,       // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]] (each bound may be null)
    kCall,       // args[0](args[1..], keywords)
    kFilter,     // args[0] | name(args[1..], keywords)
    kTest,       // args[0] is [not] name(args[1..], keywords)
    kUnary,      // name (not, -, +) args[0]
    kBinary,     // args[0] name args[1]: + - * / // % ** and or
    kConcat,     // args[0] ~ args[1] ~ ...
    kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ... (==, !=, <, in, notin, ...)
    kCondition,  // args[0] if args[1] else args[2] (args[2] may be null)
    kList,       // [args...]
    kTuple,      // (args...)
    kDict,       // {args[0]: args[1], args[2]: args[3], ...}
  };

  Kind kind = Kind::kLiteral;
  SourceLocation where;
  Value literal;
  std::string name;
  bool negated = false;  // kTest: `is not`
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> ops;  // kCompare
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conditions[i] -> bodies[i]; else_body when none holds
    kFor,       // for targets in expr [if condition]: body; else_body when empty
    kSet,       // set targets = expr; or set targets[0].attribute = expr (namespace)
    kSetBlock,  // set targets[0] [| filters] %} body {% endset: the rendered body
    kMacro,     // macro name(params): body
    kBreak,
    kContinue,
    kScope,  // with (targets[i] = values[i]) / generation: body in a new scope
  };

  Kind kind = Kind::kText;
  SourceLocation where;
  std::string text;
  std::string name;       // kMacro
  std::string attribute;  // kSet on a namespace attribute
  ExprPtr expr;
  ExprPtr condition;  // kFor filter
  std::vector<std::string> targets;
  std::vector<ExprPtr> conditions;  // kIf
  std::vector<Body> bodies;         // kIf
  std::vector<ExprPtr> values;      // kScope (with) assignments
  std::vector<ExprPtr> filters;     // kSetBlock: kFilter nodes whose args[0] is null
  std::vector<MacroParam> params;   // kMacro
  Body body;
  Body else_body;
};

}  // namespace dancemoe::jinja
