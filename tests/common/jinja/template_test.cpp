// The interpreter's semantics, case by case against what Python's jinja2
// (HF's environment: tests/fixtures/chat_templates/render_reference.py)
// renders for the same template and variables, and its limits.
#include "common/jinja/template.h"

#include <doctest/doctest.h>

#include "tests/common/jinja/template_test_util.h"

namespace dancemoe::jinja {
namespace {

using Json = nlohmann::ordered_json;
using testing::render;

struct Case {
  const char* source;
  const char* variables;
  const char* expected;
};

// Expected: jinja2 3.1's output for each.
constexpr Case kCases[] = {
    {R"J({% set x = 0 %}{% for i in [1,2,3] %}{% set x = x + i %}{{x}},{% endfor %}|{{x}})J",
     R"J({})J", R"J(1,2,3,|0)J"},
    {R"J({% macro m() %}{{ y }}{% endmacro %}{% set y = 5 %}{{ m() }})J", R"J({})J", R"J(5)J"},
    {R"J({{ m.content }})J", R"J({"m": {"a": 1}})J", R"J()J"},
    {R"J({{ [1, 2.5, "a", none, true, {"k": (1,2)}] }})J", R"J({})J",
     R"J([1, 2.5, 'a', None, True, {'k': (1, 2)}])J"},
    {R"J({{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 10/4 }} {{ 7//2 }} {{ -7 % 3 }} {{ 2**10 }} {{ 2**-1 }} {{ 1.5e-7 }} {{ 123456789.123 }})J",
     R"J({})J",
     R"J(1e+16 1000000000000000.0 0.0001 1e-05 2.5 3 2 1024 0.5 1.5e-07 123456789.123)J"},
    {R"J({{ "abc"[::-1] }} {{ [1,2,3][1:] }} {{ "héllo"|length }} {{ "héllo"[1:3] }} {{ "abcdef"[-2:] }} {{ [1,2,3,4,5][::2] }} {{ [1,2,3][-1] }})J",
     R"J({})J", R"J(cba [2, 3] 5 él ef [1, 3, 5] 3)J"},
    {R"J({{ x | length }}|{{ x | string }}|{{ x ~ "a" }}|{% for i in x %}i{% endfor %}|{{ not x }})J",
     R"J({})J", R"J(0||a||True)J"},
    {R"J({{ 1 == true }} {{ 1 == 1.0 }} {{ "a" == "a" }} {{ [1] == [1] }} {{ {"a":1} == {"a":1} }})J",
     R"J({})J", R"J(True True True True True)J"},
    {R"J({%- for k, v in d.items() if k != "b" %}{{k}}{{v}}{{loop.last}}{% endfor %})J",
     R"J({"d": {"a": 1, "b": 2, "c": 3}})J", R"J(a1Falsec3True)J"},
    {R"J({% if true %}{% set x = 1 %}{% endif %}{{x}})J", R"J({})J", R"J(1)J"},
    {R"J({% for i in [1] %}{% if true %}{% set x = 1 %}{% endif %}{{x}}{% endfor %}[{{x}}])J",
     R"J({})J", R"J(1[])J"},
    {R"J({{ n.a }})J", R"J({"n": null})J", R"J()J"},
    {R"J({{ n.a is defined }})J", R"J({"n": null})J", R"J(False)J"},
    {R"J({{ d.items()|list }} {{ d.keys()|list }} {{ d.get("a") }} {{ d.get("z", 9) }})J",
     R"J({"d": {"a": 1}})J", R"J([('a', 1)] ['a'] 1 9)J"},
    {R"J({{ "a,b,,c".split(",") }} {{ " a b  ".split() }} {{ "xxhixx".strip("x") }} {{ "abc".startswith(("x","a")) }})J",
     R"J({})J", R"J(['a', 'b', '', 'c'] ['a', 'b'] hi True)J"},
    {R"J({{ {"b":1, "a":[1,"é"]} | tojson }} {{ {"b":1}|tojson(indent=2) }} {{ [1,{"a":2}]|tojson(indent=2) }} {{ {"b":1,"a":2}|tojson(sort_keys=true) }} {{ "é"|tojson(ensure_ascii=true) }})J",
     R"J({})J",
     R"J({"b": 1, "a": [1, "é"]} {
  "b": 1
} [
  1,
  {
    "a": 2
  }
] {"a": 2, "b": 1} "\u00e9")J"},
    {R"J({% macro f(a, b=2) %}{{a}}-{{b}}-{{varargs}}-{{kwargs}}{% endmacro %}{{ f(1) }} {{ f(1, 3) }} {{ f(b=5, a=0) }})J",
     R"J({})J", R"J(1-2-()-{} 1-3-()-{} 0-5-()-{})J"},
    {R"J({{ x is none }} {{ none is none }} {{ 1 is number }} {{ "a" is string }} {{ [1] is iterable }} {{ {} is mapping }} {{ "s" is iterable }} {{ x is iterable }})J",
     R"J({})J", R"J(False True True True True True True True)J"},
    {R"J({{ true is false }} {{ false is false }} {{ 0 is false }} {{ true is number }} {{ true is integer }} {{ 1 is integer }})J",
     R"J({})J", R"J(False True False True False True)J"},
    {R"J({{ "x" if false }}|{{ 1 if true else 2 }})J", R"J({})J", R"J(|1)J"},
    {R"J({% for x in [1,2] %}{{ loop.index }}{{ loop.revindex }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.length }}{{ loop.cycle("a","b") }};{% endfor %})J",
     R"J({})J", R"J(1222a;2112b;)J"},
    {R"J({% for x in [] %}a{% else %}empty{% endfor %})J", R"J({})J", R"J(empty)J"},
    {R"J({{ range(3)|list }} {{ range(1,6,2)|list }} {{ [3,1,2]|sort }} {{ ["a","b"]|join("-") }} {{ [1,2]|first }} {{ "ab"|last }})J",
     R"J({})J", R"J([0, 1, 2] [1, 3, 5] [1, 2, 3] a-b 1 b)J"},
    {R"J({{ namespace(a=1) }})J", R"J({})J", R"J(<Namespace {'a': 1}>)J"},
    {R"J({{ "%s-%d" % ("a", 3) }})J", R"J({})J", R"J(a-3)J"},
    {R"J({{ 3 > 2 > 1 }})J", R"J({})J", R"J(True)J"},
    {R"J({{ [1,2,3]|selectattr("a")|list }})J", R"J({})J", R"J([])J"},
    {R"J({{ ms|selectattr("role", "equalto", "user")|list }} {{ ms|rejectattr("role", "equalto", "user")|map(attribute="role")|list }})J",
     R"J({"ms": [{"role": "user"}, {"role": "assistant"}]})J",
     R"J([{'role': 'user'}] ['assistant'])J"},
    {R"J({{ [1,2,3]|select("odd")|list }} {{ [1,2,3]|reject("odd")|list }} {{ ["A","b"]|map("lower")|list }})J",
     R"J({})J", R"J([1, 3] [2] ['a', 'b'])J"},
    {R"J({{ "  x  "|trim }}|{{ "xxaxx"|trim("x") }}|{{ "a b"|title }}|{{ "aB"|upper }}|{{ "HeLLo"|capitalize }})J",
     R"J({})J", R"J(x|a|A B|AB|Hello)J"},
    {R"J({{ {"a":1,"b":2}|items|list }} {{ {"b":1,"a":2}|dictsort }})J", R"J({})J",
     R"J([('a', 1), ('b', 2)] [('a', 2), ('b', 1)])J"},
    {R"J({{ [3,1,2]|max }} {{ [3,1,2]|min }} {{ [1,2]|sum }} {{ [1,1,2]|unique|list }} {{ [1,2]|reverse|list }} {{ "abc"|reverse }})J",
     R"J({})J", R"J(3 1 3 [1, 2] [2, 1] cba)J"},
    {R"J({{ "3"|int + 1 }} {{ "3.5"|float }} {{ "x"|int }} {{ 3.9|int }} {{ 2.5|round }} {{ 2.567|round(2) }})J",
     R"J({})J", R"J(4 3.5 0 3 2.0 2.57)J"},
    {R"J({{ "a
b

c"|indent(2) }}|{{ "a
b"|indent(2, true) }})J",
     R"J({})J",
     R"J(a
  b

  c|  a
  b)J"},
    {R"J({% set ns = namespace(x=1) %}{% for i in [1,2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }})J",
     R"J({})J", R"J(4)J"},
    {R"J({% set a, b = [1, 2] %}{{ a }}{{ b }})J", R"J({})J", R"J(12)J"},
    {R"J({% set x %}hello {{ 1 }}{% endset %}[{{ x }}])J", R"J({})J", R"J([hello 1])J"},
    {R"J({% for i in [1,2,3,4] %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %})J",
     R"J({})J", R"J(13)J"},
    {R"J({{ "abc" in "xabcx" }} {{ 1 in [1,2] }} {{ "a" in {"a":1} }} {{ "z" not in {"a":1} }})J",
     R"J({})J", R"J(True True True True)J"},
    {R"J({{ -1 }} {{ -1.5|abs }} {{ not true }} {{ (1, 2) }} {{ (1,) }} {{ () }})J", R"J({})J",
     R"J(-1 1.5 False (1, 2) (1,) ())J"},
    {R"J({{ messages[0].content.startswith("x") and messages[0].content.endswith("y") }})J",
     R"J({"messages": [{"content": "xay"}]})J", R"J(True)J"},
    {R"J({{ messages[::-1] }})J", R"J({"messages": [1, 2, 3]})J", R"J([3, 2, 1])J"},
    {R"J({%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}{{ ns.last_query_index }})J",
     R"J({"messages": [1, 2, 3]})J", R"J(2)J"},
    {R"J({{ l[5] }}|{{ l[-5] }})J", R"J({"l": [1]})J", R"J(|)J"},
    {R"J({{ l.append }})J", R"J({"l": [1]})J", R"J()J"},
    {R"J({% if a %}A{% elif b %}B{% else %}C{% endif %})J", R"J({"b": 1})J", R"J(B)J"},
    {R"J({{ "a" ~ 1 ~ none ~ true }})J", R"J({})J", R"J(a1NoneTrue)J"},
    {R"J({{ 0.1 + 0.2 }} {{ 1/3 }} {{ 2.0 }} {{ 100.0 }} {{ -0.0 }} {{ 1e100 }} {{ 12345678901234567.0 }})J",
     R"J({})J",
     R"J(0.30000000000000004 0.3333333333333333 2.0 100.0 -0.0 1e+100 1.2345678901234568e+16)J"},
    {R"J({{ v }})J", R"J({"v": 1.0})J", R"J(1.0)J"},
    {R"J({{ v|tojson }})J",
     R"J({"v": {"a": 1.0, "b": [1e+20, 0.5], "c": null, "d": true, "e": "x\"\n\\"}})J",
     R"J({"a": 1.0, "b": [1e+20, 0.5], "c": null, "d": true, "e": "x\"\n\\"})J"},
    {R"J({% with a = 1 %}{{ a }}{% endwith %}{{ a }})J", R"J({})J", R"J(1)J"},
    {R"J({{ loop }})J", R"J({})J", R"J()J"},
    {R"J({% for x in "ab" %}{{ x }}{% endfor %}{% for k in {"a":1,"b":2} %}{{ k }}{% endfor %})J",
     R"J({})J", R"J(abab)J"},
    {R"J({% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(3) }})J",
     R"J({})J", R"J(321)J"},
    {R"J({{ 10 // 3 }} {{ -10 // 3 }} {{ 10.5 // 3 }} {{ 10 % -3 }} {{ 2 ** 0.5 }})J", R"J({})J",
     R"J(3 -4 3.0 -2 1.4142135623730951)J"},
    {R"J({{ ("a", "b")|join }}|{{ [1, "a"]|join(",") }})J", R"J({})J", R"J(ab|1,a)J"},
    {R"J({{ x is sameas false }} {{ 2 is divisibleby 2 }} {{ 3 is odd }} {{ "ab" is lower }})J",
     R"J({"x": false})J", R"J(True True True True)J"},
    {R"J({{ ["b","A","a"]|sort }} {{ ["b","A","a"]|sort(case_sensitive=true) }} {{ [{"n":2},{"n":1}]|sort(attribute="n") }})J",
     R"J({})J", R"J(['A', 'a', 'b'] ['A', 'a', 'b'] [{'n': 1}, {'n': 2}])J"},
    {R"J({{ d|length }} {{ "é"|length }} {{ [1,2]|count }})J", R"J({"d": {"a": 1}})J",
     R"J(1 1 2)J"},
    {R"J({{ none ~ "x" }} {{ None }} {{ True }})J", R"J({})J", R"J(Nonex None True)J"},
    {R"J({%- if x -%}
  yes
{%- endif -%}
)J",
     R"J({"x": 1})J", R"J(yes)J"},
};

TEST_CASE(
    "jinja template: renders as jinja2 does (scoping, loops, macros, filters, tests, Python str)") {
  for (const Case& c : kCases) {
    INFO(c.source);
    CHECK(render(c.source, Json::parse(c.variables)) == c.expected);
  }
}

TEST_CASE("jinja template: errors a template meets while rendering name where") {
  CHECK(render("{{ x + 1 }}") == "ERROR: line 1, column 6: 'x' is undefined");
  CHECK(render("\n  {{ m.content.x }}", Json{{"m", {{"a", 1}}}}) ==
        "ERROR: line 2, column 15: 'dict object' has no attribute 'content'");
  CHECK(render("{{ 7 / 0 }}") == "ERROR: line 1, column 6: division by zero");
  CHECK(render("{{ 1 < 'a' }}") ==
        "ERROR: line 1, column 4: '<' not supported between instances of 'int' and 'str'");
  CHECK(render("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}") ==
        "ERROR: line 1, column 35: macro 'f' takes not more than 1 argument(s)");
  CHECK(render("{{ l.append(1) }}", Json{{"l", Json::array()}}) ==
        "ERROR: line 1, column 12: access to attribute 'append' of 'list' object is unsafe");
  CHECK(render("{{ x | tojson }}") ==
        "ERROR: line 1, column 8: Object of type Undefined is not JSON serializable");
  CHECK(render("{{ 9223372036854775807 + 1 }}") ==
        "ERROR: line 1, column 24: integer overflow (beyond 64 bits)");
}

TEST_CASE("jinja template: raise_exception fails with the template's own message") {
  CHECK(render("{{ raise_exception('Roles must alternate!') }}") == "ERROR: Roles must alternate!");
}

TEST_CASE("jinja template: strftime_now formats the render's clock") {
  RenderOptions options;
  options.now = std::chrono::system_clock::from_time_t(1754395200);  // 2025-08-05 12:00 UTC
  CHECK(render("{{ strftime_now('%Y') }}", Json::object(), options) == "2025");
}

TEST_CASE("jinja template: variables must be a JSON object and keep their key order") {
  Result<Template> t = Template::parse("{{ d | tojson }}");
  REQUIRE(t.is_ok());
  CHECK_FALSE(t->render(Json::array()).is_ok());
  CHECK(*t->render(Json::parse(R"({"d": {"z": 1, "a": 2}})")) == R"({"z": 1, "a": 2})");
}

TEST_CASE("jinja template: output size is bounded") {
  RenderOptions options;
  options.limits.max_output_bytes = 1000;
  CHECK(render("{% for i in range(100) %}0123456789x{% endfor %}", Json::object(), options)
            .find("over the render's limit of 1000 bytes") != std::string::npos);
  CHECK(render("{{ 'x' * 100000 }}", Json::object(), options).find("over the render's limit") !=
        std::string::npos);
  CHECK(render("{{ range(1000000000) | length }}", Json::object(), options)
            .find("over the render's limit") != std::string::npos);
}

TEST_CASE("jinja template: endless work is bounded by the step budget") {
  RenderOptions options;
  options.limits.max_steps = 100000;
  const std::string nested =
      "{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}";
  CHECK(render(nested, Json::object(), options).find("exceeded its budget") != std::string::npos);
  // Doubling a list (or string) each iteration runs out of budget before memory.
  const std::string doubling =
      "{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% "
      "endfor %}";
  CHECK(render(doubling, Json::object(), options).find("exceeded its budget") != std::string::npos);
}

TEST_CASE("jinja template: recursion is bounded") {
  CHECK(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}")
            .find("macro calls nested deeper than 32") != std::string::npos);
  const std::string deep_value =
      "{% set ns = namespace(v=[]) %}{% for i in range(200) %}{% set ns.v = [ns.v] %}{% endfor "
      "%}{{ ns.v }}";
  CHECK(render(deep_value).find("nested deeper than 128 levels") != std::string::npos);
  Json deep = Json::array();
  for (int i = 0; i < 200; ++i) deep = Json::array({deep});
  CHECK(render("{{ v }}", Json{{"v", deep}}).find("nested deeper than 128 levels") !=
        std::string::npos);
  CHECK(
      render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}").find("nested deeper than") !=
      std::string::npos);
}

TEST_CASE("jinja template: sources over the size limit are refused") {
  CHECK(Template::parse(std::string(kMaxSourceBytes + 1, 'x'))
            .status()
            .message()
            .find("over the limit") != std::string::npos);
}

}  // namespace
}  // namespace dancemoe::jinja
