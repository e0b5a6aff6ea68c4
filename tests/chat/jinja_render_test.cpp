// Unit tests of the Jinja interpreter: syntax, whitespace control, scoping, loops, macros,
// filters, tests, Python formatting and undefined semantics. (The jinja2 oracle test checks
// the same things against Python; these run without Python.)
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "chat/jinja/template.h"

namespace ridge::chat::jinja {
namespace {

using json = nlohmann::ordered_json;

std::string render(std::string_view src, const json& vars = json::object()) {
  auto t = Template::parse(src);
  if (!t.ok()) return "PARSE ERROR: " + t.status().message();
  auto r = t->render(json::object(), vars);
  if (!r.ok()) return "ERROR: " + r.status().message();
  return r->text;
}

TEST(JinjaRender, Basics) {
  EXPECT_EQ(render("a{{ 1 + 2 }}b"), "a3b");
  EXPECT_EQ(render("{{ x }}", {{"x", "hi"}}), "hi");
  EXPECT_EQ(render("{{ 'a' 'b' ~ 1 }}"), "ab1");
  EXPECT_EQ(render("{{ \"esc\\n\\x41\\u00e9\" }}"), "esc\nAé");
  EXPECT_EQ(render("{{ 'y' if false }}|{{ 1 if 0 else 2 if 0 else 3 }}"), "|3");
}

TEST(JinjaRender, WhitespaceControl) {
  // trim_blocks + lstrip_blocks
  EXPECT_EQ(render("a\n  {% if true %}\n    b\n  {% endif %}\nc"), "a\n    b\nc");
  EXPECT_EQ(render("a {%- if true -%} b {%- endif -%} c"), "abc");
  EXPECT_EQ(render("{{ 'x' -}}  \n  {{- 'y' }}"), "xy");
  EXPECT_EQ(render("  {#- c -#}  z"), "z");
  EXPECT_EQ(render("  {% if true +%}\nx{% endif %}"), "\nx");
  EXPECT_EQ(render("{% raw %}{{ not }}{% endraw %}"), "{{ not }}");
  EXPECT_EQ(render("x\n"), "x");  // keep_trailing_newline=False
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("a\n    {{ 'v' }}\n"), "a\n    v");  // no lstrip before {{
}

TEST(JinjaRender, LoopVariables) {
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}"
                   "{{ loop.last }}{{ loop.length }}{{ loop.revindex }},{% endfor %}"),
            "10TrueFalse33,21FalseFalse32,32FalseTrue31,");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}/{{ loop.nextitem }} {% endfor %}"),
            "/2 1/3 2/ ");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.last }}{% endfor %}"),
            "2False4True");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}"
                   "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "13");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
            "a=1;b=2;");
  EXPECT_EQ(render("{% for x in 'hé' %}[{{ x }}]{% endfor %}"), "[h][é]");
}

TEST(JinjaRender, Scoping) {
  // A set inside a loop is local to the iteration; the outer value is unchanged.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = x + 10 %}{{ x }}"
                   "{% endfor %}{{ x }}"),
            "1111111");
  // if blocks do not open a scope
  EXPECT_EQ(render("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
}

TEST(JinjaRender, Namespaces) {
  EXPECT_EQ(render("{% set ns = namespace(a=1, b='x') %}{% for i in [1, 2, 3] %}"
                   "{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}{{ ns.b }}"),
            "7x");
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.z = 3 %}{{ ns.z }}"), "3");
  EXPECT_EQ(render("{% set d = {} %}{% set d.x = 1 %}"),
            "ERROR: chat template line 1: cannot assign attribute on non-namespace object");
}

TEST(JinjaRender, Macros) {
  const char* m = "{% macro m(a, b=2, c='z') %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}";
  EXPECT_EQ(render(std::string(m) + "{{ m(1) }} {{ m(1, 3) }} {{ m(1, c='q') }} {{ m() }}"),
            "1-2-z 1-3-z 1-2-q -2-z");
  EXPECT_EQ(render("{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}in{% endcall %}"),
            "[in]");
  EXPECT_EQ(render("{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}"
                   "{{ r(3) }}"),
            "321");
  EXPECT_EQ(render(std::string(m) + "{{ m(1, d=2) }}").rfind("ERROR: ", 0), 0u);
  // macros see globals at call time and set their own locals
  EXPECT_EQ(render("{% macro g() %}{% set v = v ~ '!' %}{{ v }}{% endmacro %}{{ g() }}{{ v }}",
                   {{"v", "x"}}),
            "x!x");
}

TEST(JinjaRender, Filters) {
  json vars = {{"msgs", json::array({{{"role", "user"}, {"content", "u1"}},
                                     {{"role", "assistant"}, {"content", "a1"}}})}};
  EXPECT_EQ(render("{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|"
                   "join('|') }}",
                   vars),
            "u1");
  EXPECT_EQ(render("{{ ['a','b']|map('upper')|list }} {{ [1,2,3]|reject('odd')|list }}"),
            "['A', 'B'] [2]");
  EXPECT_EQ(render("{{ nope|default('d') }}{{ ''|default('e') }}{{ ''|default('e', true) }}"),
            "de");
  EXPECT_EQ(
      render(
          "{{ ' x '|trim }}|{{ 'a-b'|replace('-', '+') }}|{{ 'hello wORLD'|title }}|"
          "{{ 'abc'|upper }}|{{ 'é'|length }}|{{ [3,1,2]|sort }}|{{ ['b','A','a']|unique|list }}"),
      "x|a+b|Hello World|ABC|1|[1, 2, 3]|['b', 'A']");
  EXPECT_EQ(render("{{ {'b': 1, 'A': 2, 'a': 3}|dictsort }}"), "[('A', 2), ('a', 3), ('b', 1)]");
  EXPECT_EQ(render("{{ 2.5|round }} {{ 3.5|round }} {{ 2.567|round(2) }} {{ '3'|int + 1 }}"),
            "2.0 4.0 2.57 4");
  EXPECT_EQ(render("{{ x|tojson }}", {{"x", {{"a", json::array({1, 2.5, nullptr, true, "é"})}}}}),
            "{\"a\": [1, 2.5, null, true, \"é\"]}");
  EXPECT_EQ(render("{{ {'a': [1]}|tojson(indent=2) }}"), "{\n  \"a\": [\n    1\n  ]\n}");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|tojson(separators=(',', ':'), sort_keys=true) }}"),
            "{\"a\":2,\"b\":1}");
  EXPECT_EQ(render("{{ 'é🎉'|tojson(ensure_ascii=true) }}"), "\"\\u00e9\\ud83c\\udf89\"");
}

TEST(JinjaRender, Tests) {
  EXPECT_EQ(
      render("{{ 1 is number }}{{ true is integer }}{{ 1.0 is float }}{{ {} is mapping }}"
             "{{ 'a' is sequence }}{{ 1 is iterable }}{{ none is none }}{{ 0 is false }}"
             "{{ nope is defined }}{{ nope is iterable }}{{ 3 is odd }}{{ 'x' is in 'xyz' }}"),
      "TrueFalseTrueTrueTrueFalseTrueFalseFalseTrueTrueTrue");
}

TEST(JinjaRender, PythonFormatting) {
  EXPECT_EQ(render("{{ 1.0 }} {{ 1e-05 }} {{ 1e16 }} {{ 1e15 }} {{ 0.1 + 0.2 }} {{ -0.0 }} "
                   "{{ 10/2 }} {{ 7//2 }} {{ -7//2 }} {{ -7 % 3 }} {{ 2**-1 }} {{ 0.0001 }}"),
            "1.0 1e-05 1e+16 1000000000000000.0 0.30000000000000004 -0.0 5.0 3 -4 2 0.5 0.0001");
  EXPECT_EQ(render("{{ [1, 'a', \"b'c\", 'd\"e', none, true, 1.5, {'k': (1,)}] }}"),
            "[1, 'a', \"b'c\", 'd\"e', None, True, 1.5, {'k': (1,)}]");
  EXPECT_EQ(render("{{ ['\\n', '\\x00', '\\u200b', 'é'] }}"), "['\\n', '\\x00', '\\u200b', 'é']");
  EXPECT_EQ(render("{{ x }}", {{"x", {{"n", 1}, {"f", 2.0}, {"z", nullptr}}}}),
            "{'n': 1, 'f': 2.0, 'z': None}");
}

TEST(JinjaRender, Slicing) {
  json vars = {{"s", "héllo"}, {"l", {1, 2, 3, 4}}};
  EXPECT_EQ(render("{{ s[1:3] }} {{ s[-3:] }} {{ s[::-1] }} {{ s[::2] }} {{ s[0] }} {{ s[-1] }} "
                   "{{ l[-2:] }} {{ l[:-1] }} {{ l[10:] }} {{ l[::-1] }} {{ l[3:0:-2] }}",
                   vars),
            "él llo olléh hlo h o [3, 4] [1, 2, 3] [] [4, 3, 2, 1] [4, 2]");
  EXPECT_EQ(render("{{ s[::0] }}", vars).rfind("ERROR: ", 0), 0u);
}

TEST(JinjaRender, Undefined) {
  json vars = {{"d", {{"a", 1}}}, {"l", {1}}};
  EXPECT_EQ(render("[{{ nope }}|{{ d.missing }}|{{ d['missing'] }}|{{ l[10] }}|{{ none.x }}|"
                   "{{ nope|length }}|{% for x in nope %}x{% endfor %}]",
                   vars),
            "[|||||0|]");
  // Using an undefined value beyond printing/testing is an error, as in jinja2.
  EXPECT_EQ(render("{{ nope.attr }}"), "ERROR: chat template line 1: 'nope' is undefined");
  EXPECT_EQ(render("\n{{ nope + 1 }}"), "ERROR: chat template line 2: 'nope' is undefined");
  EXPECT_EQ(render("{{ nope() }}").rfind("ERROR: chat template line 1", 0), 0u);
  EXPECT_EQ(render("{{ l[10].x }}", vars).rfind("ERROR: chat template line 1", 0), 0u);
}

TEST(JinjaRender, StringMethods) {
  EXPECT_EQ(
      render("{{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} "
             "{{ 'xxaxx'.strip('x') }} {{ 'héllo'.find('l') }} {{ 'ab'.replace('', '-') }} "
             "{{ 'a'.startswith(('b', 'a')) }} {{ {'k': 1}.get('z', 2) }}"),
      "['a', 'b'] ['a', 'b,c'] ['a,b', 'c'] a 2 -a-b- True 2");
}

TEST(JinjaRender, RaiseExceptionAndStrftime) {
  auto t = Template::parse("{{ raise_exception('bad ' ~ 1) }}");
  ASSERT_TRUE(t.ok());
  auto r = t->render(json::object(), json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "bad 1");
  EXPECT_TRUE(r.status().is_usage());
  auto d = Template::parse("{{ strftime_now('%Y-%m-%d %H:%M %b %A') }}");
  ASSERT_TRUE(d.ok());
  RenderOptions opts;
  opts.now_unix = 1721995200;  // 2024-07-26 12:00 UTC
  auto out = d->render(json::object(), json::object(), opts);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->text, "2024-07-26 12:00 Jul Friday");
}

TEST(JinjaRender, TrustedAndUntrustedNamesMustDiffer) {
  auto t = Template::parse("{{ x }}");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->render({{"x", 1}}, {{"x", 2}}).ok());
  auto ok = t->render({{"x", 1}}, {{"y", 2}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->text, "1");
}

TEST(JinjaRender, ConcurrentRenders) {
  auto t = Template::parse("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  Template copy = *t;  // copyable: shares the AST
  json vars = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
  std::vector<std::thread> threads;
  std::vector<std::string> out(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) {
        auto r = (i % 2 ? copy : *t).render(json::object(), vars);
        out[static_cast<size_t>(i)] = r.ok() ? r->text : r.status().message();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& s : out) EXPECT_EQ(s, "<user>hi");
}

}  // namespace
}  // namespace ridge::chat::jinja
