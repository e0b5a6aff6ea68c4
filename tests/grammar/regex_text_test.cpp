// The `regex` request field: a regular expression the whole output must match, as plain text
// (no JSON escaping). std::regex (ECMAScript) is the oracle for which strings match.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace ridge::grammar {
namespace {

std::shared_ptr<const Grammar> compile(const std::string& pattern) {
  auto gbnf = regex_to_gbnf(pattern);
  EXPECT_TRUE(gbnf.ok()) << pattern << ": " << gbnf.status().message();
  if (!gbnf.ok()) return nullptr;
  auto g = parse_gbnf(*gbnf);
  EXPECT_TRUE(g.ok()) << *gbnf << ": " << g.status().message();
  return g.ok() ? *g : nullptr;
}

TEST(RegexText, AcceptsExactlyWhatTheRegexMatches) {
  const std::vector<std::string> patterns = {
      R"((yes|no), [0-9]{3}-[a-z]{2,4}\.)",
      R"(^"[^"\\]*"$)",
      R"(\d+(\.\d+)?)",
      R"([A-Z][a-z]*( [A-Z][a-z]*)*)",
      R"(a.c)",
      R"(x\\y\n?)",
      R"(\w+@\w+\.(com|org))",
      R"([^a-c]{2})",
  };
  const std::vector<std::string> texts = {
      "yes, 123-ab.", "no, 000-abcd.", "yes, 12-ab.", "maybe, 123-ab.", "yes, 123-abcde.",
      "\"quoted\"", "\"bad\\\"", "\"\"", "3.14", "42", "3.", ".5", "Hello World", "hello",
      "Hello  World", "abc", "a\nc", "a\"c", "x\\y", "x\\y\n", "xy", "me@site.com", "me@site.net",
      "de", "ab", "d", "dex", "", "\"a\"b\"",
  };
  for (const std::string& p : patterns) {
    auto g = compile(p);
    ASSERT_NE(g, nullptr);
    const std::regex oracle(p);
    int n_match = 0;
    for (const std::string& t : texts) {
      const bool want = std::regex_match(t, oracle);
      n_match += want;
      EXPECT_EQ(full_match(g, t), want) << "pattern " << p << " text '" << t << "'";
    }
    EXPECT_GT(n_match, 0) << p << ": the texts should exercise a match";
  }
}

TEST(RegexText, UnsupportedConstructsNameTheProblem) {
  for (auto [pattern, what] : std::vector<std::pair<std::string, std::string>>{
           {"(a", "regex: unclosed '('"},
           {"a(?=b)", "regex: lookaround is not supported"},
           {"(a)\\1", "regex:"},
           {"a^b", "regex: anchors are supported only at the start and end"}}) {
    auto r = regex_to_gbnf(pattern);
    ASSERT_FALSE(r.ok()) << pattern;
    EXPECT_NE(std::string(r.status().message()).find(what), std::string::npos)
        << pattern << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace ridge::grammar
