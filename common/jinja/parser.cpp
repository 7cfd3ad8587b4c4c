#include "common/jinja/parser.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>

namespace dancemoe::jinja {
namespace {

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kText:
      return "text";
    case TokenKind::kExprBegin:
      return "'{{'";
    case TokenKind::kExprEnd:
      return "'}}'";
    case TokenKind::kStmtBegin:
      return "'{%'";
    case TokenKind::kStmtEnd:
      return "'%}'";
    case TokenKind::kName:
    case TokenKind::kOperator:
    case TokenKind::kInteger:
    case TokenKind::kFloat:
      return "'" + t.text + "'";
    case TokenKind::kString:
      return "a string";
    case TokenKind::kEnd:
      return "the end of the template";
  }
  return "a token";
}

ExprPtr make_expr(Expr::Kind kind, SourceLocation where) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->where = where;
  return e;
}

StmtPtr make_stmt(Stmt::Kind kind, SourceLocation where) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->where = where;
  return s;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Body parse_template() {
    std::string found;
    Body body = parse_body({}, &found, {}, "");
    return body;
  }

 private:
  // Bounds the recursion of the parser (and so of the evaluator).
  class Nest {
   public:
    Nest(Parser& p, SourceLocation where) : p_(p) {
      if (++p_.depth_ > kMaxNesting) {
        fail(where, "template nested deeper than " + std::to_string(kMaxNesting) + " levels");
      }
    }
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
  };

  const Token& cur() const { return t_[i_]; }
  const Token& ahead(size_t n) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  void advance() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(std::string_view op) const {
    return cur().kind == TokenKind::kOperator && cur().text == op;
  }
  bool is_name(std::string_view name) const {
    return cur().kind == TokenKind::kName && cur().text == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) {
      fail(cur().where, "expected '" + std::string(op) + "', got " + describe(cur()));
    }
  }
  std::string expect_name(const char* what) {
    if (cur().kind != TokenKind::kName) {
      fail(cur().where, std::string("expected ") + what + ", got " + describe(cur()));
    }
    std::string name = cur().text;
    advance();
    return name;
  }
  void expect_stmt_end(std::string_view tag) {
    if (cur().kind != TokenKind::kStmtEnd) {
      fail(cur().where,
           "expected '%}' to end the '" + std::string(tag) + "' tag, got " + describe(cur()));
    }
    advance();
  }

  // Statements up to a `{% name %}` whose name is in `ends` (consumed up to
  // and including the name: *found says which). `opener` / `construct`
  // name the block for the error at the end of the source.
  Body parse_body(std::initializer_list<std::string_view> ends, std::string* found,
                  SourceLocation opener, std::string_view construct) {
    Body body;
    while (true) {
      const Token& t = cur();
      switch (t.kind) {
        case TokenKind::kEnd:
          if (ends.size() == 0) return body;
          fail(opener, "the '" + std::string(construct) + "' tag is never closed (expected {% end" +
                           std::string(construct) + " %})");
        case TokenKind::kText: {
          StmtPtr s = make_stmt(Stmt::Kind::kText, t.where);
          s->text = t.text;
          body.push_back(std::move(s));
          advance();
          break;
        }
        case TokenKind::kExprBegin: {
          StmtPtr s = make_stmt(Stmt::Kind::kOutput, t.where);
          advance();
          s->expr = parse_tuple(true);
          if (cur().kind != TokenKind::kExprEnd) {
            fail(cur().where, "expected '}}', got " + describe(cur()));
          }
          advance();
          body.push_back(std::move(s));
          break;
        }
        case TokenKind::kStmtBegin: {
          const Token& name = ahead(1);
          if (name.kind == TokenKind::kName &&
              std::find(ends.begin(), ends.end(), name.text) != ends.end()) {
            *found = name.text;
            advance();
            advance();
            return body;
          }
          advance();
          if (ends.size() > 0) open_.push_back({std::string(construct), opener});
          body.push_back(parse_statement());
          if (ends.size() > 0) open_.pop_back();
          break;
        }
        default:
          fail(t.where, "unexpected " + describe(t));
      }
    }
  }

  StmtPtr parse_statement() {
    const Token& t = cur();
    if (t.kind != TokenKind::kName) fail(t.where, "expected a tag name, got " + describe(t));
    const std::string tag = t.text;
    Nest nest(*this, t.where);
    if (tag == "if") return parse_if();
    if (tag == "for") return parse_for();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "with" || tag == "generation") return parse_scope(tag);
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail(t.where, "'" + tag + "' outside of a for loop");
      StmtPtr s = make_stmt(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, t.where);
      advance();
      expect_stmt_end(tag);
      return s;
    }
    static constexpr std::string_view kUnsupported[] = {"include",    "import", "from",   "extends",
                                                        "block",      "call",   "filter", "raw",
                                                        "autoescape", "do"};
    if (std::find(std::begin(kUnsupported), std::end(kUnsupported), tag) !=
        std::end(kUnsupported)) {
      fail(t.where, "the '" + tag + "' tag is not supported in chat templates");
    }
    if (tag.rfind("end", 0) == 0 || tag == "elif" || tag == "else") {
      if (open_.empty()) fail(t.where, "unexpected '" + tag + "' (no block is open)");
      const auto& [construct, at] = open_.back();
      fail(t.where, "unexpected '" + tag + "': the '" + construct + "' tag at line " +
                        std::to_string(at.line) + ", column " + std::to_string(at.column) +
                        " is still open (expected {% end" + construct + " %})");
    }
    fail(t.where, "unknown or misplaced tag '" + tag + "'");
  }

  StmtPtr parse_if() {
    StmtPtr s = make_stmt(Stmt::Kind::kIf, cur().where);
    const SourceLocation opener = cur().where;
    advance();
    while (true) {
      s->conditions.push_back(parse_tuple(false));
      expect_stmt_end("if");
      std::string found;
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, &found, opener, "if"));
      if (found == "elif") continue;
      if (found == "else") {
        expect_stmt_end("else");
        s->else_body = parse_body({"endif"}, &found, opener, "if");
      }
      expect_stmt_end("endif");
      return s;
    }
  }

  std::vector<std::string> parse_targets(const char* what) {
    std::vector<std::string> names;
    const bool parens = skip_op("(");
    do {
      names.push_back(expect_name(what));
    } while (skip_op(","));
    if (parens) expect_op(")");
    return names;
  }

  StmtPtr parse_for() {
    StmtPtr s = make_stmt(Stmt::Kind::kFor, cur().where);
    const SourceLocation opener = cur().where;
    advance();
    s->targets = parse_targets("a loop variable name");
    if (!skip_name("in"))
      fail(cur().where, "expected 'in' in the 'for' tag, got " + describe(cur()));
    s->expr = parse_tuple(false);
    if (skip_name("if")) s->condition = parse_expression(true);
    if (is_name("recursive")) fail(cur().where, "recursive for loops are not supported");
    expect_stmt_end("for");
    ++loop_depth_;
    std::string found;
    s->body = parse_body({"endfor", "else"}, &found, opener, "for");
    --loop_depth_;
    if (found == "else") {
      expect_stmt_end("else");
      s->else_body = parse_body({"endfor"}, &found, opener, "for");
    }
    expect_stmt_end("endfor");
    return s;
  }

  StmtPtr parse_set() {
    const SourceLocation opener = cur().where;
    advance();
    std::vector<std::string> targets;
    std::string attribute;
    targets.push_back(expect_name("a variable name"));
    if (skip_op(".")) {
      attribute = expect_name("an attribute name");
    } else {
      while (skip_op(",")) targets.push_back(expect_name("a variable name"));
    }
    if (skip_op("=")) {
      StmtPtr s = make_stmt(Stmt::Kind::kSet, opener);
      s->targets = std::move(targets);
      s->attribute = std::move(attribute);
      s->expr = parse_tuple(true);
      expect_stmt_end("set");
      return s;
    }
    if (!attribute.empty() || targets.size() != 1) {
      fail(cur().where, "expected '=' in the 'set' tag, got " + describe(cur()));
    }
    StmtPtr s = make_stmt(Stmt::Kind::kSetBlock, opener);
    s->targets = std::move(targets);
    while (skip_op("|")) s->filters.push_back(parse_filter(nullptr));
    expect_stmt_end("set");
    std::string found;
    s->body = parse_body({"endset"}, &found, opener, "set");
    expect_stmt_end("endset");
    return s;
  }

  StmtPtr parse_macro() {
    StmtPtr s = make_stmt(Stmt::Kind::kMacro, cur().where);
    const SourceLocation opener = cur().where;
    advance();
    s->name = expect_name("a macro name");
    expect_op("(");
    bool seen_default = false;
    while (!is_op(")")) {
      if (!s->params.empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam param;
      const SourceLocation at = cur().where;
      param.name = expect_name("a parameter name");
      if (skip_op("=")) {
        param.default_value = parse_expression(true);
        seen_default = true;
      } else if (seen_default) {
        fail(at, "parameter '" + param.name + "' without a default follows one with a default");
      }
      s->params.push_back(std::move(param));
    }
    expect_op(")");
    expect_stmt_end("macro");
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;  // a break in a macro cannot leave the caller's loop
    std::string found;
    s->body = parse_body({"endmacro"}, &found, opener, "macro");
    loop_depth_ = saved_loops;
    expect_stmt_end("endmacro");
    return s;
  }

  StmtPtr parse_scope(const std::string& tag) {
    StmtPtr s = make_stmt(Stmt::Kind::kScope, cur().where);
    const SourceLocation opener = cur().where;
    advance();
    if (tag == "with") {
      while (cur().kind != TokenKind::kStmtEnd) {
        if (!s->targets.empty()) expect_op(",");
        s->targets.push_back(expect_name("a variable name"));
        expect_op("=");
        s->values.push_back(parse_expression(true));
      }
    }
    expect_stmt_end(tag);
    std::string found;
    const std::string end = "end" + tag;
    s->body = parse_body({end}, &found, opener, tag);
    expect_stmt_end(end);
    return s;
  }

  // ---- expressions ----------------------------------------------------------

  ExprPtr parse_tuple(bool with_condition) {
    const SourceLocation where = cur().where;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) {
        if (!skip_op(",")) break;
        is_tuple = true;
        if (tuple_end()) break;
      }
      items.push_back(parse_expression(with_condition));
      if (!is_op(",")) break;
    }
    if (!is_tuple) return std::move(items.front());
    ExprPtr e = make_expr(Expr::Kind::kTuple, where);
    e->args = std::move(items);
    return e;
  }

  bool tuple_end() const {
    return cur().kind == TokenKind::kExprEnd || cur().kind == TokenKind::kStmtEnd || is_op(")") ||
           cur().kind == TokenKind::kEnd;
  }

  ExprPtr parse_expression(bool with_condition) {
    Nest nest(*this, cur().where);
    if (!with_condition) return parse_or();
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const SourceLocation where = cur().where;
      advance();
      ExprPtr cond = make_expr(Expr::Kind::kCondition, where);
      cond->args.push_back(std::move(e));
      cond->args.push_back(parse_or());
      cond->args.push_back(skip_name("else") ? parse_expression(true) : nullptr);
      e = std::move(cond);
    }
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, SourceLocation where) {
    ExprPtr e = make_expr(Expr::Kind::kBinary, where);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const SourceLocation where = cur().where;
      advance();
      left = binary("or", std::move(left), parse_and(), where);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const SourceLocation where = cur().where;
      advance();
      left = binary("and", std::move(left), parse_not(), where);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      Nest nest(*this, cur().where);
      ExprPtr e = make_expr(Expr::Kind::kUnary, cur().where);
      e->name = "not";
      advance();
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const SourceLocation where = cur().where;
    ExprPtr first = parse_math1();
    ExprPtr e;
    while (true) {
      std::string op;
      if (cur().kind == TokenKind::kOperator &&
          (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == ">" ||
           cur().text == "<=" || cur().text == ">=")) {
        op = cur().text;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && ahead(1).kind == TokenKind::kName && ahead(1).text == "in") {
        op = "notin";
        advance();
        advance();
      } else {
        break;
      }
      if (!e) {
        e = make_expr(Expr::Kind::kCompare, where);
        e->args.push_back(std::move(first));
      }
      e->ops.push_back(op);
      e->args.push_back(parse_math1());
    }
    return e ? std::move(e) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const SourceLocation where = cur().where;
      std::string op = cur().text;
      advance();
      left = binary(std::move(op), std::move(left), parse_concat(), where);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const SourceLocation where = cur().where;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    ExprPtr e = make_expr(Expr::Kind::kConcat, where);
    e->args.push_back(std::move(first));
    while (skip_op("~")) e->args.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const SourceLocation where = cur().where;
      std::string op = cur().text;
      advance();
      left = binary(std::move(op), std::move(left), parse_pow(), where);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const SourceLocation where = cur().where;
      advance();
      left = binary("**", std::move(left), parse_unary(true), where);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    Nest nest(*this, cur().where);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = make_expr(Expr::Kind::kUnary, cur().where);
      e->name = cur().text;
      advance();
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_chain(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.kind) {
      case TokenKind::kName: {
        ExprPtr e = make_expr(Expr::Kind::kLiteral, t.where);
        if (t.text == "true" || t.text == "True") {
          e->literal = Value::boolean(true);
        } else if (t.text == "false" || t.text == "False") {
          e->literal = Value::boolean(false);
        } else if (t.text == "none" || t.text == "None") {
          e->literal = Value::none();
        } else {
          e->kind = Expr::Kind::kName;
          e->name = t.text;
        }
        advance();
        return e;
      }
      case TokenKind::kString: {
        ExprPtr e = make_expr(Expr::Kind::kLiteral, t.where);
        std::string text;
        while (cur().kind == TokenKind::kString) {  // adjacent literals concatenate
          text += cur().text;
          advance();
        }
        e->literal = Value::string(std::move(text));
        return e;
      }
      case TokenKind::kInteger: {
        ExprPtr e = make_expr(Expr::Kind::kLiteral, t.where);
        e->literal = Value::integer(t.integer);
        advance();
        return e;
      }
      case TokenKind::kFloat: {
        ExprPtr e = make_expr(Expr::Kind::kLiteral, t.where);
        e->literal = Value::floating(t.number);
        advance();
        return e;
      }
      case TokenKind::kOperator:
        if (t.text == "(") return parse_parenthesized();
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail(t.where, "unexpected " + describe(t) + " in an expression");
  }

  ExprPtr parse_parenthesized() {
    const SourceLocation where = cur().where;
    advance();
    if (skip_op(")")) return make_expr(Expr::Kind::kTuple, where);
    ExprPtr e = parse_tuple(true);
    expect_op(")");
    return e;
  }

  ExprPtr parse_list() {
    ExprPtr e = make_expr(Expr::Kind::kList, cur().where);
    advance();
    while (!is_op("]")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("]")) break;
      e->args.push_back(parse_expression(true));
    }
    expect_op("]");
    return e;
  }

  ExprPtr parse_dict() {
    ExprPtr e = make_expr(Expr::Kind::kDict, cur().where);
    advance();
    while (!is_op("}")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("}")) break;
      e->args.push_back(parse_expression(true));
      expect_op(":");
      e->args.push_back(parse_expression(true));
    }
    expect_op("}");
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        const SourceLocation where = cur().where;
        advance();
        if (cur().kind == TokenKind::kInteger) {  // x.0 is x[0]
          ExprPtr item = make_expr(Expr::Kind::kItem, where);
          item->args.push_back(std::move(e));
          ExprPtr index = make_expr(Expr::Kind::kLiteral, cur().where);
          index->literal = Value::integer(cur().integer);
          advance();
          item->args.push_back(std::move(index));
          e = std::move(item);
          continue;
        }
        ExprPtr attr = make_expr(Expr::Kind::kAttribute, where);
        attr->name = expect_name("an attribute name");
        attr->args.push_back(std::move(e));
        e = std::move(attr);
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr subject) {
    const SourceLocation where = cur().where;
    advance();
    ExprPtr bounds[3];
    int n_colons = 0;
    bool slice = false;
    while (!is_op("]")) {
      if (skip_op(":")) {
        slice = true;
        if (++n_colons > 2) fail(cur().where, "a slice has at most two ':'");
        continue;
      }
      if (bounds[n_colons]) fail(cur().where, "expected ':' or ']', got " + describe(cur()));
      bounds[n_colons] = parse_expression(true);
      if (is_op(",")) fail(cur().where, "tuple subscripts are not supported");
    }
    expect_op("]");
    if (!slice) {
      if (!bounds[0]) fail(where, "empty subscript []");
      ExprPtr e = make_expr(Expr::Kind::kItem, where);
      e->args.push_back(std::move(subject));
      e->args.push_back(std::move(bounds[0]));
      return e;
    }
    ExprPtr e = make_expr(Expr::Kind::kSlice, where);
    e->args.push_back(std::move(subject));
    for (ExprPtr& bound : bounds) e->args.push_back(std::move(bound));
    return e;
  }

  // Call arguments after '(': positional, then name=value.
  void parse_call_args(Expr& call) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**"))
        fail(cur().where, "*args and **kwargs calls are not supported");
      if (cur().kind == TokenKind::kName && ahead(1).kind == TokenKind::kOperator &&
          ahead(1).text == "=") {
        std::string key = cur().text;
        advance();
        advance();
        call.keywords.emplace_back(std::move(key), parse_expression(true));
      } else {
        if (!call.keywords.empty()) {
          fail(cur().where, "a positional argument follows a keyword argument");
        }
        call.args.push_back(parse_expression(true));
      }
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr callee) {
    ExprPtr e = make_expr(Expr::Kind::kCall, cur().where);
    e->args.push_back(std::move(callee));
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter_chain(ExprPtr e) {
    while (true) {
      if (skip_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  std::string dotted_name(const char* what) {
    std::string name = expect_name(what);
    while (skip_op(".")) name += "." + expect_name(what);
    return name;
  }

  // After '|'; `subject` may be null (a `set` block's filters).
  ExprPtr parse_filter(ExprPtr subject) {
    ExprPtr e = make_expr(Expr::Kind::kFilter, cur().where);
    e->name = dotted_name("a filter name");
    e->args.push_back(std::move(subject));
    if (is_op("(")) parse_call_args(*e);
    return e;
  }

  ExprPtr parse_test(ExprPtr subject) {
    ExprPtr e = make_expr(Expr::Kind::kTest, cur().where);
    advance();  // is
    e->negated = skip_name("not");
    e->name = dotted_name("a test name");
    e->args.push_back(std::move(subject));
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((cur().kind == TokenKind::kName && !is_name("else") && !is_name("or") &&
                !is_name("and")) ||
               cur().kind == TokenKind::kString || cur().kind == TokenKind::kInteger ||
               cur().kind == TokenKind::kFloat || is_op("(") || is_op("[") || is_op("{")) {
      if (is_name("is")) fail(cur().where, "tests cannot be chained with 'is'");
      e->args.push_back(parse_postfix(parse_primary()));  // `x is sameas false`
    }
    return e;
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  // The blocks being parsed (innermost last), for the error at a stray end tag.
  std::vector<std::pair<std::string, SourceLocation>> open_;
};

}  // namespace

Body parse(std::vector<Token> tokens) { return Parser(std::move(tokens)).parse_template(); }

}  // namespace dancemoe::jinja
