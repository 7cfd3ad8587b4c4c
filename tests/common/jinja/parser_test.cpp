// Grammar and precedence as jinja2's, and every refusal naming its place.
#include "common/jinja/parser.h"

#include <doctest/doctest.h>

#include "tests/common/jinja/template_test_util.h"

namespace dancemoe::jinja {
namespace {

using testing::render;

TEST_CASE("jinja parser: operator precedence follows jinja2") {
  CHECK(render("{{ 1 + 2 * 3 ** 2 }}") == "19");
  CHECK(render("{{ -2 ** 2 }}") == "4");  // jinja2 binds unary minus tighter than **
  CHECK(render("{{ 'a' ~ 1 * 2 }}") == "a2");
  CHECK(render("{{ 'a' ~ 1 + 2 }}").find("unsupported operand") !=
        std::string::npos);  // ('a' ~ 1) + 2
  CHECK(render("{{ not 1 == 2 }}") == "True");
  CHECK(render("{{ 1 if false else 2 if true else 3 }}") == "2");
  CHECK(render("{{ [1, 2] | length + 1 }}") == "3");
  CHECK(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}") == "True False");
  CHECK(render("{{ 'x' is not none and 'b' in 'abc' }}") == "True");
}

TEST_CASE("jinja parser: unknown or unsupported tags, filters and tests are refused at parse") {
  CHECK(render("{% include 'x' %}") ==
        "ERROR: line 1, column 4: the 'include' tag is not supported in chat templates");
  CHECK(render("{% frobnicate %}") ==
        "ERROR: line 1, column 4: unknown or misplaced tag 'frobnicate'");
  CHECK(render("{{ x | frob }}") == "ERROR: line 1, column 8: no filter named 'frob'");
  CHECK(render("{{ x is frob }}") == "ERROR: line 1, column 6: no test named 'frob'");
  CHECK(render("{% break %}") == "ERROR: line 1, column 4: 'break' outside of a for loop");
  CHECK(render("{% for x in y recursive %}{% endfor %}") ==
        "ERROR: line 1, column 15: recursive for loops are not supported");
}

TEST_CASE("jinja parser: an unclosed block names the tag that opened it") {
  CHECK(render("a\n{% for m in ms %}\n{% if m %}x{% endfor %}") ==
        "ERROR: line 3, column 15: unexpected 'endfor': the 'if' tag at line 3, column 4 is still "
        "open (expected {% endif %})");
  CHECK(render("{% for m in ms %}x") ==
        "ERROR: line 1, column 4: the 'for' tag is never closed (expected {% endfor %})");
  CHECK(render("x{% endif %}") == "ERROR: line 1, column 5: unexpected 'endif' (no block is open)");
  // As in jinja2, '%}' inside an open bracket does not end the tag.
  CHECK(render("{% macro m( %}") == "ERROR: line 1, column 14: unexpected '}', expected ')'");
  CHECK(render("{% macro m(1) %}{% endmacro %}") ==
        "ERROR: line 1, column 12: expected a parameter name, got '1'");
  CHECK(render("{% macro m(a=1, b) %}{% endmacro %}") ==
        "ERROR: line 1, column 17: parameter 'b' without a default follows one with a default");
  CHECK(render("{{ }}") == "ERROR: line 1, column 4: unexpected '}}' in an expression");
}

TEST_CASE("jinja parser: nesting is bounded") {
  std::string deep = "{{ " + std::string(200, '(') + "1" + std::string(200, ')') + " }}";
  CHECK(render(deep).find("nested deeper than") != std::string::npos);
  std::string ifs;
  for (int i = 0; i < 100; ++i) ifs += "{% if true %}";
  for (int i = 0; i < 100; ++i) ifs += "{% endif %}";
  CHECK(render(ifs).find("nested deeper than") != std::string::npos);
  std::string fine = "{{ " + std::string(10, '(') + "1" + std::string(10, ')') + " }}";
  CHECK(render(fine) == "1");
}

}  // namespace
}  // namespace dancemoe::jinja
