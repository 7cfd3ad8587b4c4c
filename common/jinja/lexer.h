// Lexer: a Jinja template source as a flat list of tokens -- text between
// tags, the `{{ }}` / `{% %}` delimiters, and the names, literals and
// operators inside them; comments `{# #}` are dropped.
//
// Whitespace is handled as jinja2's lexer does with HF's settings
// (trim_blocks and lstrip_blocks on, keep_trailing_newline off):
//   - `{%-` / `{{-` / `{#-` remove all whitespace before the tag;
//     `-%}` / `-}}` / `-#}` remove all whitespace after it;
//   - lstrip_blocks: spaces and tabs between the start of a line and a
//     `{%` or `{#` tag are removed (unless the tag is `{%+`);
//   - trim_blocks: the first newline after a `%}` or `#}` is removed (unless
//     the tag ends `+%}`);
//   - "\r\n" and "\r" become "\n"; one newline at the end of the source is
//     dropped.
// Inside a tag `}}` / `%}` only end it outside brackets, so a dict literal
// `{{ {'a': {'b': 1}} }}` works. String literals are unescaped as Python
// does (\n, \t, \xhh, \uXXXX, ...).
//
// Errors (TemplateError with the line and column): an unterminated tag,
// comment or string; an unexpected character; an unbalanced bracket; an
// integer beyond 64 bits; source that is not UTF-8. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/jinja/template_error.h"

namespace dancemoe::jinja {

enum class TokenKind {
  kText,       // text: the raw text between tags
  kExprBegin,  // {{
  kExprEnd,    // }}
  kStmtBegin,  // {%
  kStmtEnd,    // %}
  kName,       // text: identifier or keyword (and, or, not, in, is, if, ...)
  kString,     // text: the unescaped value
  kInteger,    // integer
  kFloat,      // number
  kOperator,   // text: + - * / // % ** ~ == != < > <= >= = . : | , ( ) [ ] { }
  kEnd,        // end of the source
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int64_t integer = 0;
  double number = 0;
  SourceLocation where;
};

std::vector<Token> tokenize(std::string_view source);

}  // namespace dancemoe::jinja
