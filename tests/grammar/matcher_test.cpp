// Matcher: the language accepted, UTF-8 handling, EOG, copies, and the mask against a slow
// reference on a small vocabulary.
#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace ridge::grammar {
namespace {

std::shared_ptr<const Grammar> must_parse(std::string_view src) {
  auto g = parse_gbnf(src);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? *g : nullptr;
}

TEST(Matcher, AcceptsExactlyTheLanguage) {
  auto g = must_parse(R"g(
root ::= greeting " " name ("!" | "?")?
greeting ::= "hi" | "hello" | "hey"
name ::= [A-Z] [a-z]{1,3}
)g");
  for (const char* ok : {"hi Bob", "hello Ann!", "hey Zzzz?", "hi Al"}) {
    EXPECT_TRUE(full_match(g, ok)) << ok;
  }
  for (const char* bad :
       {"hi bob", "hi B", "hi Bobby", "hell Bob", "hi Bob!!", "hi  Bob", "", "hi Bob\n"}) {
    EXPECT_FALSE(full_match(g, bad)) << bad;
  }
  EXPECT_TRUE(full_match(g, "hel", false));
  EXPECT_FALSE(full_match(g, "hex", false));
}

TEST(Matcher, MultiByteClassesAndPartialCharacters) {
  auto g = must_parse(R"g(root ::= [α-ω]{2} [一-鿿]+ "😀"?)g");
  EXPECT_TRUE(full_match(g, "αω中"));
  EXPECT_TRUE(full_match(g, "βγ中文字😀"));
  EXPECT_FALSE(full_match(g, "α中"));
  EXPECT_FALSE(full_match(g, "αβγ中"));
  EXPECT_FALSE(full_match(g, "ab中"));
  // Byte level: a prefix of a character is accepted only if a completion is in a class.
  auto vocab = byte_vocab();
  Matcher m(g, vocab);
  ASSERT_TRUE(m.accept_token(0xCE).ok());  // first byte of α..ω (U+03B1..U+03C9)
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(m.can_continue());
  std::vector<uint8_t> mask;
  m.fill_mask(mask);
  EXPECT_TRUE(mask[0xB1]);   // α = CE B1
  EXPECT_FALSE(mask[0x91]);  // Α (capital) = CE 91
  EXPECT_FALSE(mask[256]);   // no EOG mid-character
  EXPECT_FALSE(m.accept_token(0x91).ok());
  EXPECT_TRUE(m.accept_token(0xB1).ok());
  Matcher bad(g, vocab);
  EXPECT_FALSE(bad.accept_token(0xC3).ok());  // C3 xx is U+00C0..U+00FF: not in the class
  EXPECT_FALSE(bad.accept_token(0xFF).ok());  // never valid UTF-8
  EXPECT_FALSE(bad.accept_token(0x80).ok());  // a lone continuation byte
}

TEST(Matcher, OverlongAndSurrogateBytesAreRejected) {
  auto g = must_parse("root ::= .*");
  auto vocab = byte_vocab();
  for (std::string bytes : {std::string("\xC0\x80"), std::string("\xE0\x80\x80"),
                            std::string("\xED\xA0\x80"), std::string("\xF4\x90\x80\x80")}) {
    Matcher m(g, vocab);
    bool ok = true;
    for (char c : bytes) ok = ok && m.accept_token(static_cast<uint8_t>(c)).ok();
    EXPECT_FALSE(ok);
  }
  EXPECT_TRUE(full_match(g, "\xF4\x8F\xBF\xBF"));  // U+10FFFF
}

TEST(Matcher, EogAndCompletion) {
  auto g = must_parse(R"g(root ::= "a" "b"?)g");
  auto vocab = byte_vocab();
  Matcher m(g, vocab);
  EXPECT_FALSE(m.is_complete());
  EXPECT_FALSE(m.accept_token(256).ok());  // EOG before complete
  ASSERT_TRUE(m.accept_token('a').ok());
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.can_continue());
  Matcher copy = m;
  ASSERT_TRUE(m.accept_token('b').ok());
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.can_continue());
  std::vector<uint8_t> mask;
  m.fill_mask(mask);
  ASSERT_EQ(mask.size(), 257u);
  for (size_t t = 0; t < 256; ++t) EXPECT_FALSE(mask[t]) << t;
  EXPECT_TRUE(mask[256]);
  ASSERT_TRUE(m.accept_token(256).ok());
  EXPECT_TRUE(m.finished());
  m.fill_mask(mask);
  for (uint8_t v : mask) EXPECT_FALSE(v);
  EXPECT_FALSE(m.accept_token('b').ok());
  // The copy is independent.
  EXPECT_TRUE(copy.accept_token('b').ok());
  EXPECT_FALSE(m.accept_token(-1).ok());
  EXPECT_FALSE(m.accept_token(257).ok());
}

TEST(Matcher, RejectedTokenLeavesStateUnchanged) {
  auto g = must_parse(R"g(root ::= "ab" "c")g");
  auto vocab = small_vocab();
  const auto& strings = small_vocab_strings();
  auto id = [&](std::string_view s) {
    for (size_t i = 0; i < strings.size(); ++i) {
      if (strings[i] == s) return static_cast<int32_t>(i);
    }
    return -1;
  };
  Matcher m(g, vocab);
  EXPECT_FALSE(m.accept_token(id("b")).ok());
  const Status s = m.accept_token(id("x"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("grammar: token"), std::string::npos) << s.message();
  ASSERT_TRUE(m.accept_token(id("abc")).ok());
  EXPECT_TRUE(m.is_complete());
  const int32_t control = static_cast<int32_t>(strings.size()) - 4;
  EXPECT_FALSE(m.accept_token(control).ok());
}

TEST(Matcher, EmptyVocabularyAndEmptyLanguage) {
  auto g = must_parse("root ::= \"a\"");
  auto empty =
      std::make_shared<const TokenIndex>(std::vector<std::string>{}, std::vector<int32_t>{3});
  Matcher m(g, empty);
  std::vector<uint8_t> mask{1, 2, 3};
  m.fill_mask(mask);
  EXPECT_TRUE(mask.empty());
  EXPECT_EQ(empty->n_vocab(), 0);
  EXPECT_FALSE(m.accept_token(0).ok());
  auto eps = must_parse("root ::= ");
  Matcher e(eps, byte_vocab());
  EXPECT_TRUE(e.is_complete());
  EXPECT_FALSE(e.can_continue());
  e.fill_mask(mask);
  EXPECT_EQ(std::count(mask.begin(), mask.end(), 1), 1);
  EXPECT_TRUE(mask[256]);
}

TEST(Matcher, DeepNestingIsBoundedNotACrash) {
  auto g = must_parse("root ::= \"[\" root? \"]\"");
  Matcher m(g, byte_vocab());
  Status last;
  for (size_t i = 0; i < Grammar::kMaxDepth + 10 && last.ok(); ++i) last = m.accept_token('[');
  EXPECT_FALSE(last.ok());
  EXPECT_NE(last.message().find("nesting deeper"), std::string::npos) << last.message();
}

// For random states reached by random walks, fill_mask equals the slow reference.
void check_mask_against_reference(const std::shared_ptr<const Grammar>& g,
                                  const std::shared_ptr<const TokenIndex>& vocab, uint32_t seed,
                                  int walks, int steps) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> mask;
  int checked = 0;
  for (int w = 0; w < walks; ++w) {
    Matcher m(g, vocab);
    for (int s = 0; s < steps; ++s) {
      m.fill_mask(mask);
      const auto ref = reference_mask(m, vocab->n_vocab());
      ASSERT_EQ(mask, ref) << "walk " << w << " step " << s;
      ++checked;
      std::vector<int32_t> allowed;
      for (size_t t = 0; t < mask.size(); ++t) {
        if (mask[t]) allowed.push_back(static_cast<int32_t>(t));
      }
      if (allowed.empty()) break;
      const int32_t t = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      ASSERT_TRUE(m.accept_token(t).ok());
      if (m.finished()) break;
    }
  }
  EXPECT_GT(checked, walks);
}

TEST(MaskConsistency, SmallVocabularyJsonObject) {
  auto g = parse_gbnf(any_json_object_gbnf());
  ASSERT_TRUE(g.ok()) << g.status().message();
  check_mask_against_reference(*g, small_vocab(), 1, 30, 60);
}

TEST(MaskConsistency, SmallVocabularyUnicodeGrammar) {
  auto g = must_parse(R"g(
root ::= ( word | "\"" [^"]{0,3} "\"" | [é中😀]+ | "\\" [nu] ) ( " " root )?
word ::= [a-c]+ | "true" | "null"
)g");
  check_mask_against_reference(g, small_vocab(), 2, 40, 30);
}

}  // namespace
}  // namespace ridge::grammar
