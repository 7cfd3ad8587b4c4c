// Parser: tokens (lexer.h) into a syntax tree (ast.h), following jinja2's
// grammar and operator precedence (lowest first): `x if c else y`, or, and,
// not, comparisons (== != < > <= >= in, not in; chainable), + -, ~, * / // %,
// **, unary - +, then postfix .attr [item] [a:b:c] (call) and the | filter
// and `is` test chains.
//
// Statements: if/elif/else, for (with `if` filter, `else`, tuple targets),
// set (to a name, names, a namespace attribute, or a block with filters),
// macro (parameters with defaults), break/continue (in a loop), with, and
// HF's `generation` block (rendered as its body). Any other tag (include,
// import, extends, block, call, filter, raw, ...) is refused by name.
//
// Nesting is bounded (kMaxNesting statements or expression levels) so that
// neither parsing nor evaluating can exhaust the stack. Errors are
// TemplateError with the line, column and the construct. Pure; thread-safe.
#pragma once

#include <vector>

#include "common/jinja/ast.h"
#include "common/jinja/lexer.h"

namespace dancemoe::jinja {

inline constexpr int kMaxNesting = 64;

Body parse(std::vector<Token> tokens);

}  // namespace dancemoe::jinja
