// Errors: unsupported constructs are rejected at parse time with the template line, runtime
// errors name the line, and hostile templates or data fail instead of crashing or hanging.
#include <gtest/gtest.h>

#include <string>

#include "chat/jinja/template.h"

namespace ridge::chat::jinja {
namespace {

using json = nlohmann::ordered_json;

std::string parse_error(std::string_view src) {
  auto t = Template::parse(src);
  return t.ok() ? "(parsed)" : t.status().message();
}

std::string render_error(std::string_view src, const json& vars = json::object()) {
  auto t = Template::parse(src);
  if (!t.ok()) return "PARSE: " + t.status().message();
  auto r = t->render(json::object(), vars);
  return r.ok() ? "(rendered)" : r.status().message();
}

TEST(JinjaErrors, UnsupportedConstructsFailAtParseWithLine) {
  EXPECT_EQ(parse_error("a\n{% extends 'base.html' %}"),
            "chat template line 2: unsupported '{% extends %}'");
  EXPECT_EQ(parse_error("\n\n{% include 'x' %}"),
            "chat template line 3: unsupported '{% include %}'");
  EXPECT_EQ(parse_error("{% import 'x' as y %}"),
            "chat template line 1: unsupported '{% import %}'");
  EXPECT_EQ(parse_error("{% if x %}\n{{ x|frobnicate }}{% endif %}"),
            "chat template line 2: unsupported filter 'frobnicate'");
  EXPECT_EQ(parse_error("{{ x is frobnicated }}"),
            "chat template line 1: unsupported test 'frobnicated'");
  EXPECT_EQ(parse_error("{% for x in y recursive %}{% endfor %}"),
            "chat template line 1: unsupported recursive loop");
  EXPECT_EQ(parse_error("{% frob %}"), "chat template line 1: unsupported statement 'frob'");
  auto t = Template::parse("{% extends 'x' %}");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(t.status().is_usage());
}

TEST(JinjaErrors, SyntaxErrors) {
  EXPECT_NE(parse_error("{% if x %}never closed"), "(parsed)");
  EXPECT_NE(parse_error("{{ 1 + }}"), "(parsed)");
  EXPECT_NE(parse_error("{{ x"), "(parsed)");
  EXPECT_NE(parse_error("{# open comment"), "(parsed)");
  EXPECT_NE(parse_error("{{ 'unterminated }}"), "(parsed)");
  EXPECT_NE(parse_error("{% break %}"), "(parsed)");  // outside a loop
  EXPECT_NE(parse_error("{% endif %}"), "(parsed)");
  EXPECT_EQ(parse_error("{{ (1 + ) }}").rfind("chat template line 1:", 0), 0u);
}

TEST(JinjaErrors, RuntimeErrorsNameTheLine) {
  EXPECT_EQ(render_error("\n\n{{ 'a' + 1 }}"),
            "chat template line 3: unsupported operand type(s) for +: 'str' and 'int'");
  EXPECT_EQ(render_error("{% for x in 5 %}{% endfor %}"),
            "chat template line 1: 'int' object is not iterable");
  EXPECT_EQ(render_error("{{ 1 < 'a' }}"),
            "chat template line 1: '<' not supported between instances of 'int' and 'str'");
  EXPECT_EQ(render_error("{{ x|tojson }}"),
            "chat template line 1: Object of type Undefined is not JSON serializable");
  // raise_exception keeps its message verbatim
  EXPECT_EQ(render_error("\n{{ raise_exception('Only user and assistant roles!') }}"),
            "Only user and assistant roles!");
}

TEST(JinjaErrors, DeepNestingIsAnErrorNotACrash) {
  std::string parens = std::string(1000, '(') + "1" + std::string(1000, ')');
  EXPECT_NE(parse_error("{{ " + parens + " }}"), "(parsed)");
  std::string nots;
  for (int i = 0; i < 1000; ++i) nots += "not ";
  EXPECT_NE(parse_error("{{ " + nots + "1 }}"), "(parsed)");
  std::string ifs, endifs;
  for (int i = 0; i < 1000; ++i) {
    ifs += "{% if true %}";
    endifs += "{% endif %}";
  }
  EXPECT_NE(parse_error(ifs + endifs), "(parsed)");
  std::string lists = std::string(1000, '[') + std::string(1000, ']');
  EXPECT_NE(parse_error("{{ " + lists + " }}"), "(parsed)");
  // data nested 1000 deep
  json deep = json::array();
  for (int i = 0; i < 1000; ++i) deep = json::array({deep});
  EXPECT_NE(render_error("{{ x|tojson }}", {{"x", deep}}), "(rendered)");
  // unbounded macro recursion
  EXPECT_EQ(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
            "chat template line 1: macro recursion too deep");
  // a template that builds a deeply nested value
  EXPECT_NE(render_error("{% set ns = namespace(v=[]) %}{% for i in range(5000) %}"
                         "{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v|tojson }}"),
            "(rendered)");
  EXPECT_NE(render_error("{% set ns = namespace(v=none) %}{% for i in range(100000) %}"
                         "{% set ns.v = namespace(v=ns.v) %}{% endfor %}"),
            "(rendered)");
  // a namespace that holds itself: printing and comparing terminate
  auto t = Template::parse("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns == ns }}");
  ASSERT_TRUE(t.ok());
  auto r = t->render(json::object(), json::object());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->text, "True");
  EXPECT_NE(render_error("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), "");
}

TEST(JinjaErrors, OutputAndLoopsAreBounded) {
  EXPECT_EQ(render_error("{% set ns = namespace(s='x') %}{% for i in range(40) %}"
                         "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
            "chat template line 1: string larger than 64 MiB");
  EXPECT_NE(render_error("{% for i in range(3000) %}{% for j in range(3000) %}"
                         "{% endfor %}{% endfor %}"),
            "(rendered)");
  EXPECT_NE(render_error("{% for i in range(100000000) %}{% endfor %}"), "(rendered)");
  EXPECT_NE(render_error("{% for i in range(1000000) %}{{ 'x' * 1000 }}{% endfor %}"),
            "(rendered)");
}

}  // namespace
}  // namespace ridge::chat::jinja
