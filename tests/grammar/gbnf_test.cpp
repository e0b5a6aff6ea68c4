// GBNF parser: valid grammars (llama.cpp's examples written from the syntax) and errors.
#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar.h"
#include "grammar_test_util.h"

namespace ridge::grammar {
namespace {

const char* kArithmetic = R"g(
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)g";

const char* kList = R"g(
root ::= item+
# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)g";

const char* kJson = R"g(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)g";

TEST(Gbnf, ParsesExampleGrammars) {
  for (const char* src : {kArithmetic, kList, kJson}) {
    auto g = parse_gbnf(src);
    ASSERT_TRUE(g.ok()) << g.status().message() << "\n" << src;
  }
}

TEST(Gbnf, ArithmeticLanguage) {
  auto g = parse_gbnf(kArithmetic);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(full_match(*g, "a=b\n"));
  EXPECT_TRUE(full_match(*g, "x1 +(y*2) =3\nz=4\n"));
  EXPECT_FALSE(full_match(*g, "a=b"));
  EXPECT_FALSE(full_match(*g, "1a=b\n"));
  EXPECT_FALSE(full_match(*g, "=b\n"));
  EXPECT_FALSE(full_match(*g, ""));
}

TEST(Gbnf, JsonLanguage) {
  auto g = parse_gbnf(kJson);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(full_match(*g, R"g({"a": [1, 2.5e3, true, null, "x\n\u00e9"], "b": {}})g"));
  EXPECT_TRUE(full_match(*g, "{}"));
  EXPECT_FALSE(full_match(*g, "[]"));
  EXPECT_FALSE(full_match(*g, R"g({"a": 01})g"));
  EXPECT_FALSE(full_match(*g, R"g({"a" 1})g"));
  EXPECT_FALSE(full_match(*g, "{\"a\": \"\x01\"}"));
  // The whitespace rule is bounded: 20 indentation characters, not 21.
  EXPECT_TRUE(full_match(*g, "{\n" + std::string(20, ' ') + "}"));
  EXPECT_FALSE(full_match(*g, "{\n" + std::string(21, ' ') + "}"));
}

TEST(Gbnf, RepetitionBounds) {
  auto g = parse_gbnf(R"g(root ::= "a"{2,4} "b"{3} "c"{1,} "d"{0,1} ("x" | "y"){0,2})g");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(full_match(*g, "aabbbc"));
  EXPECT_TRUE(full_match(*g, "aaaabbbcccdxy"));
  EXPECT_FALSE(full_match(*g, "abbbc"));
  EXPECT_FALSE(full_match(*g, "aaaaabbbc"));
  EXPECT_FALSE(full_match(*g, "aabbc"));
  EXPECT_FALSE(full_match(*g, "aabbb"));
  EXPECT_FALSE(full_match(*g, "aabbbcdd"));
  EXPECT_FALSE(full_match(*g, "aabbbcxyx"));
  auto e = parse_gbnf(R"g(root ::= "a"{0,0} "b")g");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(full_match(*e, "b"));
  EXPECT_FALSE(full_match(*e, "ab"));
}

TEST(Gbnf, EscapesAndClasses) {
  auto g = parse_gbnf(R"g(root ::= "\x41\u00e9\U0001F600\t\"\\" [^a-c\]] . [α-ω]+)g");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(full_match(*g, "Aé😀\t\"\\d中αβω"));
  EXPECT_TRUE(full_match(*g, "Aé😀\t\"\\dx", false));  // a prefix
  EXPECT_FALSE(full_match(*g, "Aé😀\t\"\\a中α"));
  EXPECT_FALSE(full_match(*g, "Aé😀\t\"\\d中a"));
  EXPECT_FALSE(full_match(*g, "Aé😀\t\"\\d中"));
}

TEST(Gbnf, MultiLineRulesAndComments) {
  auto g = parse_gbnf("# header\nroot ::=\n  \"a\" # first\n  | \"b\"\n  rest\nrest ::= \"c\"\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(full_match(*g, "a"));
  EXPECT_TRUE(full_match(*g, "bc"));
  EXPECT_FALSE(full_match(*g, "b"));
  auto alt_root = parse_gbnf("start ::= \"s\"", "start");
  ASSERT_TRUE(alt_root.ok());
  EXPECT_TRUE(full_match(*alt_root, "s"));
}

void expect_error(const std::string& src, const std::string& needle) {
  auto g = parse_gbnf(src);
  ASSERT_FALSE(g.ok()) << src;
  EXPECT_TRUE(g.status().is_usage());
  EXPECT_NE(g.status().message().find(needle), std::string::npos)
      << "got: " << g.status().message() << "\nwanted: " << needle;
}

TEST(Gbnf, Errors) {
  expect_error("", "grammar: line 1 col 1: empty grammar");
  expect_error("  # only a comment\n", "empty grammar");
  expect_error("root ::= foo", "grammar: line 1 col 10: undefined rule 'foo'");
  expect_error("root ::= \"a\"\n\nx ::= \"b\" (", "line 3 col 11: unclosed '('");
  expect_error("main ::= \"a\"", "missing root rule 'root'");
  expect_error("root ::= \"abc", "line 1 col 10: unterminated string literal");
  expect_error("root ::= [a-", "unterminated character class");
  expect_error("root ::= [z-a]", "reversed");
  expect_error("root ::= \"a\" )", "line 1 col 14: unbalanced ')'");
  expect_error("root ::= \"\\q\"", "unknown escape");
  expect_error("root ::= \"\\xZZ\"", "bad hex escape");
  expect_error("root ::= \"\\uD800\"", "not a Unicode scalar value");
  expect_error("root ::= \"a\"{3,1}", "n < m");
  expect_error("root ::= \"a\"{99999}", "repetition count over");
  expect_error("root ::= \"a\"\nroot ::= \"b\"", "line 2 col 1: rule 'root' is defined twice");
  expect_error("root ::= root \"a\" | \"b\"", "left recursion in rule 'root'");
  expect_error("root ::= x\nx ::= y? \"a\"\ny ::= x", "left recursion");
  expect_error("root ::= (\"a\"?)*", "left recursion");
  expect_error("root ::= \"a\" root", "can never match");
  expect_error("root ::= []", "can never match");
  expect_error("root ::= @", "unexpected character '@'");
  expect_error("root = \"a\"", "expected '::='");
  expect_error("root ::= " + std::string(1000, '(') + "\"a\"" + std::string(1000, ')'),
               "nested too deeply");
  expect_error("root ::= ((\"a\"{1000}){1000}){1000}", "grammar too large");
}

TEST(Gbnf, EmptyAlternativeAndEmptyLanguage) {
  auto g = parse_gbnf("root ::= \"\" | \"a\"");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(full_match(*g, ""));
  EXPECT_TRUE(full_match(*g, "a"));
  auto e = parse_gbnf("root ::= ");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(full_match(*e, ""));
  EXPECT_FALSE(full_match(*e, "a"));
}

// Token references: llama.cpp's <[id]> and <text> (brackets included in the text), our
// <"text"> for texts not written in angle brackets, and negation !<...>.
TEST(Gbnf, TokenReferences) {
  const ControlVocab& v = control_vocab();
  const TokenResolver* r = &v.resolver;
  auto g = parse_gbnf(R"g(root ::= <|end|> <"[TOOL_CALLS]"> <[3]> !<|channel|> <"<|end|>">)g",
                      "root", r);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE((*g)->has_tokens());
  // Escapes in the quoted form; an id needs no vocabulary.
  EXPECT_TRUE(parse_gbnf(R"g(root ::= <"[TOOL\x5fCALLS]"> "a")g", "root", r).ok());
  EXPECT_TRUE(parse_gbnf(R"g(root ::= <[12]> ("a" | !<[7]>)*)g").ok());
  EXPECT_FALSE(parse_gbnf(R"g(root ::= "a")g").value()->has_tokens());
  // A normal (text) token may be named too.
  EXPECT_TRUE(parse_gbnf(R"g(root ::= <"true">)g", "root", r).ok());
}

void expect_token_error(const std::string& src, const std::string& needle,
                        const TokenResolver* r) {
  auto g = parse_gbnf(src, "root", r);
  ASSERT_FALSE(g.ok()) << src;
  EXPECT_TRUE(g.status().is_usage());
  EXPECT_NE(g.status().message().find(needle), std::string::npos)
      << "got: " << g.status().message() << "\nwanted: " << needle;
}

TEST(Gbnf, TokenReferenceErrors) {
  const TokenResolver* r = &control_vocab().resolver;
  expect_token_error("root ::= \"a\" <|nope|>", "grammar: line 1 col 14: unknown token '<|nope|>'",
                     r);
  expect_token_error("root ::= \"a\"\n  !<\"[NOPE]\">", "line 2 col 3: unknown token '!<\"[NOPE]\">'",
                     r);
  expect_token_error("root ::= <[999999]>", "unknown token '<[999999]>'", r);
  expect_token_error("root ::= <[99999999999999]>", "unknown token", nullptr);
  // Without a vocabulary, token text cannot be resolved.
  expect_token_error("root ::= <|end|>", "unknown token '<|end|>' (no vocabulary", nullptr);
  expect_token_error("root ::= <[12", "expected '<[id]>'", r);
  expect_token_error("root ::= <[]>", "expected '<[id]>'", r);
  expect_token_error("root ::= <|end", "unterminated token reference", r);
  expect_token_error("root ::= <\"[ARGS]", "unterminated token reference", r);
  expect_token_error("root ::= <\"[ARGS]\"x", "expected '\">'", r);
  expect_token_error("root ::= <\"\">", "unknown token", r);
  expect_token_error("root ::= ! <|end|>", "unexpected character '!'", r);
}

}  // namespace
}  // namespace ridge::grammar
