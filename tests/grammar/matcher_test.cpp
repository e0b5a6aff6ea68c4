// Matcher: the language accepted, UTF-8 handling, EOG, copies, and the mask against a slow
// reference on a small vocabulary.
#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// Token references (docs/grammar.md): a token element matches exactly that token id, never its
// text spelled in characters; text never matches a control token.
std::shared_ptr<const Grammar> must_parse_tokens(std::string_view src) {
  auto g = parse_gbnf(src, "root", &control_vocab().resolver);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? *g : nullptr;
}

size_t n_allowed(const std::vector<uint8_t>& mask) {
  return static_cast<size_t>(std::count(mask.begin(), mask.end(), 1));
}

TEST(MatcherTokens, ControlTokenOnlyWhereTheGrammarHasIt) {
  const ControlVocab& v = control_vocab();
  auto g = must_parse_tokens(R"g(root ::= "a" <"[TOOL_CALLS]"> "b")g");
  Matcher m(g, v.index);
  std::vector<uint8_t> mask;
  m.fill_mask(mask);
  EXPECT_EQ(n_allowed(mask), 1u);
  EXPECT_TRUE(mask[static_cast<size_t>(v.id("a"))]);
  ASSERT_TRUE(m.accept_token(v.id("a")).ok());
  m.fill_mask(mask);
  EXPECT_EQ(n_allowed(mask), 1u);
  EXPECT_TRUE(mask[static_cast<size_t>(v.id("[TOOL_CALLS]"))]);
  EXPECT_FALSE(m.accept_token(v.id("[ARGS]")).ok());
  EXPECT_FALSE(m.accept_token(v.id("[")).ok());
  EXPECT_FALSE(m.accept_token(v.id("b")).ok());
  ASSERT_TRUE(m.accept_token(v.id("[TOOL_CALLS]")).ok());
  EXPECT_FALSE(m.is_complete());
  m.fill_mask(mask);
  EXPECT_EQ(n_allowed(mask), 1u);
  ASSERT_TRUE(m.accept_token(v.id("b")).ok());
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.accept_token(v.id("</s>")).ok());
  EXPECT_TRUE(m.finished());
}

TEST(MatcherTokens, TextSpellingIsNotTheToken) {
  const ControlVocab& v = control_vocab();
  auto g = must_parse_tokens(R"g(root ::= <"[TOOL_CALLS]"> "x")g");
  Matcher m(g, v.index);
  EXPECT_FALSE(m.accept_bytes("[TOOL_CALLS]x").ok());
  EXPECT_FALSE(m.accept_token(v.id("[")).ok());
  // A text rule spelling a control token's text matches the characters, not the token.
  auto t = must_parse_tokens(R"g(root ::= "[TOOL_CALLS]" "x" | "<|end|>")g");
  Matcher n(t, v.index);
  std::vector<uint8_t> mask;
  n.fill_mask(mask);
  EXPECT_FALSE(mask[static_cast<size_t>(v.id("[TOOL_CALLS]"))]);
  EXPECT_FALSE(mask[static_cast<size_t>(v.id("<|end|>"))]);
  EXPECT_TRUE(mask[static_cast<size_t>(v.id("<|"))]);
  EXPECT_FALSE(n.accept_token(v.id("[TOOL_CALLS]")).ok());
  Matcher text = n;
  ASSERT_TRUE(text.accept_bytes("[TOOL_CALLS]x").ok());
  EXPECT_TRUE(text.is_complete());
  ASSERT_TRUE(n.accept_token(v.id("<|")).ok());
  ASSERT_TRUE(n.accept_bytes("end|>").ok());
  EXPECT_TRUE(n.is_complete());
}

TEST(MatcherTokens, MixedTextAndTokensEndingInAnEogToken) {
  const ControlVocab& v = control_vocab();
  auto g = must_parse_tokens(R"g(root ::= ( [a-c]+ <|end|> )+ "ok" <|call|>)g");
  Matcher m(g, v.index);
  std::vector<uint8_t> mask;
  for (const char* t : {"ab", "<|end|>", "c", "<|end|>", "o", "k"}) {
    m.fill_mask(mask);
    ASSERT_EQ(mask, reference_mask(m, v.index->n_vocab())) << t;
    ASSERT_TRUE(mask[static_cast<size_t>(v.id(t))]) << t;
    ASSERT_TRUE(m.accept_token(v.id(t)).ok()) << t;
  }
  // <|call|> is an end-of-generation token: here it is the grammar's token element, so it is
  // allowed (the others are not, the output is not complete) and does not finish the matcher.
  m.fill_mask(mask);
  EXPECT_EQ(n_allowed(mask), 1u);
  EXPECT_TRUE(mask[static_cast<size_t>(v.id("<|call|>"))]);
  EXPECT_FALSE(m.accept_token(v.id("</s>")).ok());
  ASSERT_TRUE(m.accept_token(v.id("<|call|>")).ok());
  EXPECT_FALSE(m.finished());
  EXPECT_TRUE(m.is_complete());
  m.fill_mask(mask);
  EXPECT_TRUE(mask[static_cast<size_t>(v.id("</s>"))]);
  EXPECT_TRUE(mask[static_cast<size_t>(v.id("<|call|>"))]);  // now as end of generation
  ASSERT_TRUE(m.accept_token(v.id("<|call|>")).ok());
  EXPECT_TRUE(m.finished());
}

TEST(MatcherTokens, NoTokenInsideACharacter) {
  const ControlVocab& v = control_vocab();
  auto g = must_parse_tokens(R"g(root ::= "é" <|end|> | "é" "x")g");
  Matcher m(g, v.index);
  ASSERT_TRUE(m.accept_token(v.id("\xC3")).ok());
  std::vector<uint8_t> mask;
  m.fill_mask(mask);
  EXPECT_FALSE(mask[static_cast<size_t>(v.id("<|end|>"))]);
  EXPECT_FALSE(m.accept_token(v.id("<|end|>")).ok());
  ASSERT_TRUE(m.accept_token(v.id("\xA9")).ok());
  m.fill_mask(mask);
  EXPECT_TRUE(mask[static_cast<size_t>(v.id("<|end|>"))]);
  EXPECT_TRUE(mask[static_cast<size_t>(v.id("x"))]);
  EXPECT_EQ(n_allowed(mask), 2u);
}

TEST(MatcherTokens, NegatedTokenMatchesAnyOtherToken) {
  const ControlVocab& v = control_vocab();
  auto g = must_parse_tokens(R"g(root ::= <|channel|> (!<|end|>)* <|end|>)g");
  Matcher m(g, v.index);
  ASSERT_TRUE(m.accept_token(v.id("<|channel|>")).ok());
  std::vector<uint8_t> mask;
  m.fill_mask(mask);
  // Every token but the end-of-generation ones; <|end|> through the exact element.
  EXPECT_EQ(n_allowed(mask), static_cast<size_t>(v.index->n_vocab()) - 3);
  for (int32_t e : v.index->eog_ids()) EXPECT_FALSE(mask[static_cast<size_t>(e)]);
  // Whole tokens, whatever their bytes: a lone UTF-8 lead byte, a control token.
  for (const char* t : {"\xE4", "\xFF", "[TOOL_CALLS]", "<|channel|>", "ab"}) {
    ASSERT_TRUE(m.accept_token(v.id(t)).ok()) << t;
  }
  EXPECT_FALSE(m.is_complete());
  ASSERT_TRUE(m.accept_token(v.id("<|end|>")).ok());
  EXPECT_TRUE(m.is_complete());
}

TEST(MaskConsistency, TokenGrammars) {
  const ControlVocab& v = control_vocab();
  uint32_t seed = 10;
  for (const char* src : {
           R"g(root ::= ( "a" | <|end|> | [é中]+ | "\"" )* <|call|>)g",
           R"g(root ::= <|channel|> ( !<|end|> | "ab" | [é中] )* <|end|> "x"?)g",
           R"g(root ::= ( <"[TOOL_CALLS]"> [a-z]+ <"[ARGS]"> "{" [^}]* "}" )+)g",
           R"g(root ::= ( !<[0]> | "é" )+ | <[0]> <"<|">)g",
       }) {
    check_mask_against_reference(must_parse_tokens(src), v.index, seed++, 40, 30);
  }
}

}  // namespace
}  // namespace ridge::grammar
