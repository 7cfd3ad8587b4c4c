// Whitespace control as HF's jinja2 settings have it (trim_blocks,
// lstrip_blocks), string escapes, and lexical errors with their position.
#include "common/jinja/lexer.h"

#include <doctest/doctest.h>

#include "tests/common/jinja/template_test_util.h"

namespace dancemoe::jinja {
namespace {

using testing::render;

TEST_CASE("jinja lexer: trim_blocks drops the newline after a block tag, not after an expression") {
  CHECK(render("{% if true %}\nA\n{% endif %}\nB") == "A\nB");
  CHECK(render("{{ 'x' }}\ny") == "x\ny");
  CHECK(render("{# note #}\nz") == "z");
}

TEST_CASE("jinja lexer: lstrip_blocks drops the indentation of a line holding only a block tag") {
  CHECK(render("a\n    {% if true %}\n    b\n    {% endif %}\nc") == "a\n    b\nc");
  CHECK(render("a\n  {%+ if true %}x{% endif %}") == "a\n  x");
  CHECK(render("  {{ 1 }}") == "  1");  // expressions keep their indentation
}

TEST_CASE("jinja lexer: '-' marks strip all whitespace on their side") {
  CHECK(render("a  \n {%- if true -%} \n  b  {{- ' c ' -}}  \n d{%- endif %}") == "ab c d");
  CHECK(render("x {#- gone -#}   y") == "xy");
}

TEST_CASE("jinja lexer: newlines are normalized and one trailing newline is dropped") {
  CHECK(render("a\r\nb\rc\n") == "a\nb\nc");
  CHECK(render("a\n\n") == "a\n");
}

TEST_CASE("jinja lexer: string literals unescape as Python's") {
  CHECK(render(R"({{ 'a\nb\t\'q\' \"d\" \\ \x41\u00e9\U0001F600 \d' }})") ==
        "a\nb\t'q' \"d\" \\ A\xc3\xa9\xf0\x9f\x98\x80 \\d");
  CHECK(render(R"({{ "it's" 'x' }})") == "it'sx");  // adjacent literals join
}

TEST_CASE("jinja lexer: brackets inside a tag keep '}}' from ending it") {
  CHECK(render("{{ {'a': {'b': 1}}['a']['b'] }}") == "1");
}

TEST_CASE("jinja lexer: raw blocks are output as written") {
  CHECK(render("{% raw %}{{ x }}{% endraw %}") == "{{ x }}");
}

TEST_CASE("jinja lexer: errors name the line and column") {
  CHECK(render("ok\n  {{ 'open") == "ERROR: line 2, column 6: unterminated string literal");
  CHECK(render("{{ 1 ") == "ERROR: line 1, column 1: missing end of tag '}}'");
  CHECK(render("{# never") == "ERROR: line 1, column 1: missing end of comment tag '#}'");
  CHECK(render("{{ 1 ? 2 }}") == "ERROR: line 1, column 6: unexpected character '?' in a tag");
  CHECK(render("{{ (1 ] }}") == "ERROR: line 1, column 7: unexpected ']', expected ')'");
  CHECK(render("{{ 99999999999999999999 }}").find("does not fit 64 bits") != std::string::npos);
  CHECK(render(std::string("\xff")).find("not valid UTF-8") != std::string::npos);
  CHECK(render(R"({{ '\ud800' }})").find("not a Unicode scalar value") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::jinja
