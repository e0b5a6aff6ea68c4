// JSON Schema conversion: one case per keyword (strings that must and must not match) and
// refusals that name the keyword and where it is.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "grammar/grammar.h"
#include "grammar_test_util.h"

namespace ridge::grammar {
namespace {

using nlohmann::json;

std::shared_ptr<const Grammar> compile(const json& schema) {
  auto text = json_schema_to_gbnf(schema);
  EXPECT_TRUE(text.ok()) << text.status().message() << "\n" << schema.dump();
  if (!text.ok()) return nullptr;
  auto g = parse_gbnf(*text);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << *text;
  return g.ok() ? *g : nullptr;
}

void expect_language(const json& schema, std::initializer_list<const char*> yes,
                     std::initializer_list<const char*> no) {
  auto g = compile(schema);
  if (!g) return;
  for (const char* s : yes)
    EXPECT_TRUE(full_match(g, s)) << schema.dump() << " should accept " << s;
  for (const char* s : no)
    EXPECT_FALSE(full_match(g, s)) << schema.dump() << " should reject " << s;
}

TEST(JsonSchema, Primitives) {
  expect_language({{"type", "null"}}, {"null"}, {"nul", "0", "\"null\""});
  expect_language({{"type", "boolean"}}, {"true", "false"}, {"1", "True"});
  expect_language({{"type", "integer"}}, {"0", "-12", "999999999999999999"},
                  {"01", "1.0", "-", "+1", "1e3", "9999999999999999999"});
  expect_language({{"type", "number"}}, {"0", "-1.5", "2e10", "3.25E-7", "0.0"},
                  {"01", ".5", "1.", "1e", "NaN"});
  expect_language({{"type", "string"}}, {R"("")", R"("a b")", R"("\"\\\n\u00e9")", "\"中😀\""},
                  {R"("a)", R"("\x")", "\"\x01\"", R"("\ud800")", "'a'"});
  expect_language({{"type", json::array({"string", "null"})}}, {"null", R"("x")"}, {"1"});
  expect_language(json::object(), {"1", "[]", R"({"a": [null]})"}, {"", "[,]"});
  expect_language(true, {"{}", "\"s\""}, {"x"});
}

TEST(JsonSchema, IntegerBounds) {
  expect_language({{"type", "integer"}, {"minimum", 0}, {"maximum", 255}},
                  {"0", "9", "10", "99", "100", "199", "200", "249", "250", "255"},
                  {"-1", "256", "300", "1000", "-0", "00"});
  expect_language({{"type", "integer"}, {"minimum", -15}, {"exclusiveMaximum", 7}},
                  {"-15", "-10", "-1", "0", "6"}, {"-16", "7", "-20"});
  expect_language({{"type", "integer"}, {"exclusiveMinimum", 1.5}}, {"2", "12345"},
                  {"1", "0", "-3"});
  expect_language({{"type", "integer"}, {"minimum", 123}, {"maximum", 4567}},
                  {"123", "129", "130", "999", "1000", "4499", "4560", "4567"},
                  {"122", "4568", "5000", "12"});
}

TEST(JsonSchema, Strings) {
  expect_language({{"type", "string"}, {"minLength", 2}, {"maxLength", 3}},
                  {R"("ab")", R"("abc")", R"("\n\t")", "\"中文字\""}, {R"("a")", R"("abcd")"});
  expect_language({{"type", "string"}, {"pattern", "^[a-c]+x?$"}}, {R"("a")", R"("abcx")"},
                  {R"("")", R"("ad")", R"("xa")"});
  expect_language({{"type", "string"}, {"pattern", "b\\d{2}"}}, {R"("b12")", R"("xxb99yy")"},
                  {R"("b1")", R"("")"});
  expect_language({{"type", "string"}, {"pattern", "^(ab|c)*\\.(?:x|y)$"}},
                  {R"(".x")", R"("abcab.y")"}, {R"("a.x")", R"("ab.z")"});
  expect_language({{"type", "string"}, {"pattern", "^[^a-z\"]{2}$"}}, {R"("AB")", R"("\n1")"},
                  {R"("aB")", R"("\"A")", R"("A")"});
  expect_language({{"type", "string"}, {"pattern", "^\\\\.$"}}, {R"("\\a")", R"("\\\\")"},
                  {R"("\\")", R"("\\\n")"});
  expect_language({{"type", "string"}, {"format", "date"}}, {R"("2024-02-29")"},
                  {R"("2024-13-01")", R"("24-01-01")"});
  expect_language({{"type", "string"}, {"format", "time"}},
                  {R"("23:59:59Z")", R"("01:02:03.5+05:30")"}, {R"("24:00:00Z")", R"("01:02:03")"});
  expect_language({{"type", "string"}, {"format", "date-time"}}, {R"("2024-01-02T03:04:05Z")"},
                  {R"("2024-01-02 03:04:05Z")"});
  expect_language({{"type", "string"}, {"format", "uuid"}},
                  {R"("123e4567-e89b-12d3-a456-426614174000")"},
                  {R"("123e4567e89b12d3a456426614174000")"});
  expect_language({{"type", "string"}, {"format", "email"}}, {R"("anything")"}, {"1"});
}

TEST(JsonSchema, EnumAndConst) {
  expect_language({{"enum", {"red", "green", 3, nullptr, true}}},
                  {R"("red")", R"("green")", "3", "null", "true"}, {R"("blue")", "false", "4"});
  expect_language({{"type", "string"}, {"enum", {"a", 1}}}, {R"("a")"}, {"1"});
  expect_language({{"const", {{"k", {1, 2}}}}}, {R"({"k":[1,2]})"}, {R"({"k": [1,2]})"});
  expect_language({{"const", "x"}, {"enum", {"x", "y"}}}, {R"("x")"}, {R"("y")"});
}

TEST(JsonSchema, Objects) {
  const json s = {
      {"type", "object"},
      {"properties",
       {{"a", {{"type", "integer"}}}, {"b", {{"type", "string"}}}, {"c", {{"type", "boolean"}}}}},
      {"required", {"b"}}};
  expect_language(s,
                  {R"({"b": "x"})", R"({"a": 1, "b": "x"})", R"({"b":"x","c":true})",
                   R"({ "a" : 1 , "b" : "" , "c" : false })", "{\n  \"b\": \"\"\n}"},
                  {"{}", R"({"a": 1})", R"({"b": "x", "d": 1})", R"({"b": "x",})",
                   R"({"b": "x" "c": true})", R"({"c": true, "b": "x"})"});
  json extra = s;
  extra["additionalProperties"] = {{"type", "integer"}};
  expect_language(
      extra, {R"({"b": "x", "zz": 5})", R"({"b": "x", "aa": 1, "bb": 2})", R"({"b":"", "ab": 1})"},
      {R"({"b": "x", "zz": "s"})", R"({"b": "x", "a": 1})", R"({"b": "x", "c": 1})"});
  expect_language({{"type", "object"}}, {"{}", R"({"x": [1]})"}, {"[]"});
  expect_language({{"type", "object"}, {"additionalProperties", false}}, {"{}"}, {R"({"x": 1})"});
  expect_language({{"type", "object"}, {"required", {"q"}}}, {R"({"q": 1})", R"({"q": 1, "r": 2})"},
                  {"{}", R"({"r": 2})"});
}

TEST(JsonSchema, Arrays) {
  expect_language(
      {{"type", "array"}, {"items", {{"type", "integer"}}}, {"minItems", 1}, {"maxItems", 3}},
      {"[1]", "[1, 2, 3]", "[ 1 ,2 ]"}, {"[]", "[1,2,3,4]", "[1,]", R"(["a"])"});
  expect_language({{"type", "array"}, {"items", {{"type", "null"}}}}, {"[]", "[null,null]"},
                  {"[1]"});
  expect_language({{"type", "array"},
                   {"prefixItems", {{{"type", "string"}}, {{"type", "integer"}}}},
                   {"items", false}},
                  {"[]", R"(["a"])", R"(["a", 1])"}, {"[1]", R"(["a", 1, 2])"});
  expect_language({{"type", "array"},
                   {"prefixItems", {{{"const", 1}}}},
                   {"items", {{"type", "boolean"}}},
                   {"minItems", 2}},
                  {"[1, true]", "[1,false,true]"}, {"[1]", "[true, true]", "[1, 2]"});
}

TEST(JsonSchema, CombinatorsAndRefs) {
  expect_language({{"anyOf", {{{"type", "integer"}}, {{"type", "string"}, {"maxLength", 1}}}}},
                  {"5", R"("a")"}, {R"("ab")", "null"});
  expect_language({{"oneOf", {{{"type", "null"}}, {{"type", "boolean"}}}}}, {"null", "true"},
                  {"1"});
  const json tree = {{"$defs",
                      {{"node",
                        {{"type", "object"},
                         {"properties",
                          {{"v", {{"type", "integer"}}},
                           {"kids", {{"type", "array"}, {"items", {{"$ref", "#/$defs/node"}}}}}}},
                         {"required", {"v"}}}}}},
                     {"$ref", "#/$defs/node"}};
  expect_language(tree, {R"({"v": 1})", R"({"kids": [{"v": 2}, {"kids": [], "v": 3}], "v": 1})"},
                  {R"({"kids": [{}], "v": 1})"});
  expect_language({{"definitions", {{"s", {{"type", "string"}}}}}, {"$ref", "#/definitions/s"}},
                  {R"("x")"}, {"1"});
  expect_language(
      {{"allOf",
        {{{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}, {"required", {"a"}}},
         {{"properties", {{"b", {{"type", "null"}}}}}, {"required", {"b"}}}}}},
      {R"({"a": 1, "b": null})"}, {R"({"a": 1})", R"({"b": null})"});
  expect_language({{"allOf", {{{"$ref", "#/$defs/x"}}}}, {"$defs", {{"x", {{"type", "boolean"}}}}}},
                  {"true"}, {"1"});
}

TEST(JsonSchema, OrderedSchemaKeepsPropertyOrder) {
  const std::string text = R"({"type": "object", "properties": {"zeta": {"type": "integer"},
      "alpha": {"type": "boolean"}}, "required": ["zeta", "alpha"]})";
  auto ordered = json_schema_to_gbnf_ordered(nlohmann::ordered_json::parse(text));
  ASSERT_TRUE(ordered.ok()) << ordered.status().message();
  auto g = parse_gbnf(*ordered);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(full_match(*g, R"({"zeta": 1, "alpha": true})"));
  EXPECT_FALSE(full_match(*g, R"({"alpha": true, "zeta": 1})"));
  auto sorted = compile(json::parse(text));  // nlohmann::json sorts keys
  ASSERT_TRUE(sorted);
  EXPECT_TRUE(full_match(sorted, R"({"alpha": true, "zeta": 1})"));
  EXPECT_FALSE(full_match(sorted, R"({"zeta": 1, "alpha": true})"));
  auto refused = json_schema_to_gbnf_ordered(nlohmann::ordered_json::parse(R"({"not": {}})"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("unsupported keyword 'not'"), std::string::npos);
}

TEST(JsonSchema, AnyJsonObject) {
  auto g = parse_gbnf(any_json_object_gbnf());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(full_match(*g, R"({"a": {"b": [1, "x", null, {}]}, "c": -0.5e3})"));
  EXPECT_FALSE(full_match(*g, "[1]"));
  EXPECT_FALSE(full_match(*g, R"({"a": 1,})"));
  EXPECT_FALSE(full_match(*g, "{" + std::string(25, ' ') + "}"));  // whitespace is bounded
}

void expect_refusal(const json& schema, const std::string& needle) {
  auto r = json_schema_to_gbnf(schema);
  ASSERT_FALSE(r.ok()) << schema.dump();
  EXPECT_TRUE(r.status().is_usage());
  EXPECT_NE(r.status().message().find(needle), std::string::npos)
      << "got: " << r.status().message() << "\nwanted: " << needle;
}

TEST(JsonSchema, Refusals) {
  expect_refusal(
      {{"type", "object"}, {"properties", {{"x", {{"patternProperties", json::object()}}}}}},
      "json_schema: /properties/x: unsupported keyword 'patternProperties'");
  expect_refusal({{"not", {{"type", "string"}}}}, "json_schema: /: unsupported keyword 'not'");
  expect_refusal({{"type", "integer"}, {"multipleOf", 2}}, "unsupported keyword 'multipleOf'");
  expect_refusal({{"type", "object"}, {"minProperties", 1}}, "unsupported keyword 'minProperties'");
  expect_refusal({{"if", json::object()}}, "unsupported keyword 'if'");
  expect_refusal({{"type", "array"}, {"contains", json::object()}},
                 "unsupported keyword 'contains'");
  expect_refusal({{"type", "array"}, {"uniqueItems", true}}, "'uniqueItems'");
  expect_refusal({{"type", "number"}, {"minimum", 0}}, "'minimum' on type 'number'");
  expect_refusal({{"type", "string"}, {"pattern", "(a)\\1"}}, "/pattern: pattern: backreferences");
  expect_refusal({{"type", "string"}, {"pattern", "a(?=b)"}}, "lookaround");
  expect_refusal({{"type", "string"}, {"pattern", "\\bword"}}, "word boundaries");
  expect_refusal({{"type", "string"}, {"pattern", "a^b"}}, "anchors");
  expect_refusal({{"type", "string"}, {"pattern", "(a*)*"}}, "can be empty");
  expect_refusal({{"type", "string"}, {"pattern", "[a-"}}, "unterminated");
  expect_refusal({{"type", "string"}, {"pattern", "^a"}, {"maxLength", 3}}, "'pattern' beside");
  expect_refusal({{"$ref", "http://example.com/s.json"}}, "only local references");
  expect_refusal({{"$ref", "#/$defs/missing"}}, "cannot resolve '$ref' '#/$defs/missing'");
  expect_refusal({{"type", "array"}, {"items", {{{"type", "string"}}}}}, "array form of 'items'");
  expect_refusal({{"type", "string"}, {"minLength", 5}, {"maxLength", 2}}, "'minLength' is larger");
  expect_refusal({{"type", "integer"}, {"minimum", 5}, {"maximum", 2}}, "no integer");
  expect_refusal(false, "matches nothing");
  expect_refusal(json(3), "must be an object or a boolean");
  expect_refusal({{"type", "frob"}}, "/type: unknown type 'frob'");
  expect_refusal({{"enum", json::array()}}, "'enum' must be a non-empty array");
  expect_refusal({{"type", "string"}, {"enum", {1, 2}}}, "no 'enum'/'const' value");
  expect_refusal(
      {{"type", "object"}, {"properties", {{"a/b", {{"type", "string"}, {"maxLength", -1}}}}}},
      "/properties/a~1b: 'maxLength' must be a non-negative integer");
  expect_refusal({{"type", "object"},
                  {"required", {"z"}},
                  {"properties", {{"a", true}}},
                  {"additionalProperties", false}},
                 "required property 'z'");
  expect_refusal({{"$defs", {{"a", {{"anyOf", {{{"$ref", "#/$defs/a"}}, {{"type", "null"}}}}}}}},
                  {"$ref", "#/$defs/a"}},
                 "left recursion");
}

TEST(JsonSchema, DeepNestingIsAnError) {
  json s = {{"type", "string"}};
  for (int i = 0; i < 1000; ++i) s = {{"type", "array"}, {"items", s}};
  expect_refusal(s, "nested deeper than");
  json t = {{"type", "string"}};
  for (int i = 0; i < 1000; ++i) t = {{"anyOf", {t}}};
  expect_refusal(t, "nested deeper than");
}

}  // namespace
}  // namespace ridge::grammar
