#include "common/jinja/template.h"

#include "common/jinja/filters.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/is_tests.h"
#include "common/jinja/lexer.h"
#include "common/jinja/parser.h"
#include "common/jinja/value_format.h"

namespace dancemoe::jinja {
namespace {

Status to_status(const TemplateError& e) {
  if (e.raised()) return invalid_argument(e.what());
  const SourceLocation at = e.where();
  if (at.line == 0) return invalid_argument(e.what());
  return invalid_argument("line " + std::to_string(at.line) + ", column " +
                          std::to_string(at.column) + ": " + e.what());
}

// Filters and tests are looked up by name when the template is compiled.
void check_names(const Expr& e) {
  if (e.kind == Expr::Kind::kFilter && !has_filter(e.name))
    fail(e.where, "no filter named '" + e.name + "'");
  if (e.kind == Expr::Kind::kTest && !has_test(e.name))
    fail(e.where, "no test named '" + e.name + "'");
  for (const ExprPtr& arg : e.args) {
    if (arg) check_names(*arg);
  }
  for (const auto& [name, value] : e.keywords) check_names(*value);
}

void check_names(const Body& body) {
  for (const StmtPtr& s : body) {
    for (const Expr* e : {s->expr.get(), s->condition.get()}) {
      if (e) check_names(*e);
    }
    for (const auto* list : {&s->conditions, &s->values, &s->filters}) {
      for (const ExprPtr& e : *list) {
        if (!e) continue;
        if (e->kind == Expr::Kind::kFilter && !has_filter(e->name)) {
          fail(e->where, "no filter named '" + e->name + "'");
        }
        check_names(*e);
      }
    }
    for (const MacroParam& p : s->params) {
      if (p.default_value) check_names(*p.default_value);
    }
    for (const Body& b : s->bodies) check_names(b);
    check_names(s->body);
    check_names(s->else_body);
  }
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  if (source.size() > kMaxSourceBytes) {
    return invalid_argument("template of " + std::to_string(source.size()) +
                            " bytes is over the limit of " + std::to_string(kMaxSourceBytes));
  }
  try {
    auto body = std::make_shared<Body>(jinja::parse(tokenize(source)));
    check_names(*body);
    return Template(std::move(body));
  } catch (const TemplateError& e) {
    return to_status(e);
  }
}

Result<std::string> Template::render(const nlohmann::ordered_json& variables,
                                     const RenderOptions& options) const {
  if (!variables.is_object()) return invalid_argument("template variables must be a JSON object");
  try {
    ValueDict vars;
    for (const auto& [name, value] : variables.items()) vars.set(name, from_json(value));
    RenderState state(options.limits, options.now);
    return interpret(*body_, vars, state);
  } catch (const TemplateError& e) {
    return to_status(e);
  }
}

Result<std::string> to_python_json(const nlohmann::ordered_json& json) {
  try {
    return to_json(from_json(json), JsonDumpOptions());
  } catch (const TemplateError& e) {
    return to_status(e);
  }
}

}  // namespace dancemoe::jinja
