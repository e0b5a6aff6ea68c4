// GrammarCache: one compiled grammar and one state cache per grammar text, shared by the
// matchers of every request using it; bounded by entries and by memory.
#include "grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace ridge::grammar {
namespace {

TEST(GrammarCache, SameTextSharesGrammarAndStates) {
  const ControlVocab& v = control_vocab();
  GrammarCache cache(v.index, v.resolver);
  const std::string text = any_json_object_gbnf();
  auto a = cache.get(text);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = cache.get(text);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(cache.size(), 1u);
  std::shared_ptr<StateCache> states = cache.states(*a);
  ASSERT_NE(states, nullptr);
  EXPECT_EQ(cache.states(*b), states);

  // The first request walks the vocabulary for each new state; the second request's masks
  // along the same output are all memoised.
  std::vector<uint8_t> mask, first_mask;
  Matcher m1 = cache.matcher(*a);
  m1.fill_mask(first_mask);
  ASSERT_TRUE(m1.accept_bytes("{\"a\"").ok());
  m1.fill_mask(mask);
  const StateCache::Stats after_first = states->stats();
  EXPECT_EQ(after_first.mask_walks, 2u);
  EXPECT_EQ(after_first.mask_hits, 0u);
  EXPECT_GT(after_first.states, 1u);
  EXPECT_GT(states->memory_bytes(), 0u);
  Matcher m2 = cache.matcher(*b);
  m2.fill_mask(mask);
  EXPECT_EQ(mask, first_mask);
  ASSERT_TRUE(m2.accept_bytes("{\"a\"").ok());
  m2.fill_mask(mask);
  const StateCache::Stats after_second = states->stats();
  EXPECT_EQ(after_second.mask_walks, 2u);
  EXPECT_EQ(after_second.mask_hits, 2u);
  EXPECT_EQ(after_second.states, after_first.states);

  // Another root of the same text is another grammar.
  auto other_root = cache.get(text, "j-string");
  ASSERT_TRUE(other_root.ok()) << other_root.status().message();
  EXPECT_NE(other_root->get(), a->get());
  EXPECT_NE(cache.states(*other_root), states);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(GrammarCache, DifferentTextsErrorsAndForeignGrammars) {
  const ControlVocab& v = control_vocab();
  GrammarCache cache(v.index, v.resolver);
  auto a = cache.get("root ::= \"a\"");
  auto b = cache.get("root ::= \"b\"");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->get(), b->get());
  EXPECT_NE(cache.states(*a), cache.states(*b));
  // Token references resolve through the cache's resolver.
  auto t = cache.get("root ::= <|end|> \"a\"");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(cache.matcher(*t).accept_token(v.id("<|end|>")).ok());
  // Errors are returned, not kept.
  auto bad = cache.get("root ::= <|nope|>");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown token '<|nope|>'"), std::string::npos);
  EXPECT_EQ(cache.size(), 3u);
  // A grammar parsed elsewhere gets a matcher with a state cache of its own.
  auto foreign = parse_gbnf("root ::= \"a\"");
  ASSERT_TRUE(foreign.ok());
  EXPECT_EQ(cache.states(*foreign), nullptr);
  Matcher m = cache.matcher(*foreign);
  EXPECT_TRUE(m.accept_token(v.id("a")).ok());
  EXPECT_TRUE(m.is_complete());
}

TEST(GrammarCache, LeastRecentlyUsedEntriesAreDropped) {
  const ControlVocab& v = control_vocab();
  GrammarCache cache(v.index, v.resolver, /*max_entries=*/2);
  auto a = cache.get("root ::= \"a\"");
  auto b = cache.get("root ::= \"b\"");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(cache.get("root ::= \"a\"").ok());  // a is now the most recent
  auto c = cache.get("root ::= \"c\"");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_NE(cache.states(*a), nullptr);
  EXPECT_EQ(cache.states(*b), nullptr);  // dropped
  EXPECT_NE(cache.states(*c), nullptr);
  // A dropped grammar still works (requests holding it keep it alive), unshared.
  Matcher m = cache.matcher(*b);
  EXPECT_TRUE(m.accept_token(v.id("b")).ok());
  auto b2 = cache.get("root ::= \"b\"");
  ASSERT_TRUE(b2.ok());
  EXPECT_NE(b2->get(), b->get());  // parsed again
}

TEST(GrammarCache, MemoryBoundDropsEntries) {
  const ControlVocab& v = control_vocab();
  GrammarCache cache(v.index, v.resolver, /*max_entries=*/16, /*max_bytes=*/1);
  auto a = cache.get("root ::= [a-z]+");
  ASSERT_TRUE(a.ok());
  std::vector<uint8_t> mask;
  cache.matcher(*a).fill_mask(mask);  // a's states now hold memory
  EXPECT_EQ(cache.size(), 1u);        // the most recent entry always stays
  auto b = cache.get("root ::= [0-9]+");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.states(*a), nullptr);
  EXPECT_NE(cache.states(*b), nullptr);
}

}  // namespace
}  // namespace ridge::grammar
