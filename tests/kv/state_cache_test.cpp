// StateCache: slots handed out for snapshots, found by the prefix they end (hash, parent and
// tokens all compared), evicted least recently used first, never while taken.
#include <gtest/gtest.h>

#include <vector>

#include "kv/state_cache.h"

namespace ridge::kv {
namespace {

struct Key {
  std::vector<int32_t> tokens;
  BlockHash parent = kRootBlockHash;
  StateKey get() const { return {hash_block(parent, tokens), parent, tokens}; }
};

TEST(StateCache, TakenStatesAreFoundOncePublished) {
  StateCache c(4, 2, 3);  // slots 4 and 5, blocks of 3 tokens
  const Key a{{1, 2, 3}}, b{{4, 5, 6}};
  EXPECT_FALSE(c.find(a.get()));
  auto sa = c.take(a.get());
  ASSERT_TRUE(sa);
  EXPECT_EQ(*sa, 4);
  EXPECT_FALSE(c.find(a.get())) << "not written yet";
  EXPECT_FALSE(c.take(a.get())) << "the same prefix twice";
  c.publish(*sa);
  EXPECT_EQ(c.find(a.get()), sa);
  EXPECT_EQ(c.n_cached(), 1);
  auto sb = c.take(b.get());
  ASSERT_TRUE(sb);
  EXPECT_EQ(*sb, 5);
  const Key e{{7, 8, 9}};
  EXPECT_EQ(c.take(e.get()), sa) << "a is cached, b taken: a is evicted";
  EXPECT_FALSE(c.take(Key{{1, 1, 1}}.get())) << "both taken";
}

TEST(StateCache, EvictsTheLeastRecentlyUsedCachedState) {
  StateCache c(0, 2, 2);
  const Key a{{1, 2}}, b{{3, 4}}, d{{5, 6}};
  c.publish(*c.take(a.get()));
  c.publish(*c.take(b.get()));
  EXPECT_TRUE(c.find(a.get()));  // a used after b: b goes first
  auto sd = c.take(d.get());
  ASSERT_TRUE(sd);
  EXPECT_TRUE(c.contains(a.get()));
  EXPECT_FALSE(c.contains(b.get()));
  EXPECT_EQ(c.stats().n_evictions, 1);
  // A taken slot is never evicted: with d taken and a cached, one more take evicts a, then none.
  EXPECT_TRUE(c.take(b.get()));
  EXPECT_FALSE(c.contains(a.get()));
  EXPECT_FALSE(c.take(a.get()));
  c.abandon(*sd);
  EXPECT_TRUE(c.take(a.get()));
}

TEST(StateCache, ComparesParentAndTokensNotJustTheHash) {
  StateCache c(0, 1, 2);
  const Key a{{1, 2}};
  c.publish(*c.take(a.get()));
  StateKey forged = a.get();
  const std::vector<int32_t> other = {2, 1};
  forged.tokens = other;
  EXPECT_FALSE(c.find(forged));
  forged = a.get();
  forged.parent = 7;
  EXPECT_FALSE(c.find(forged));
  const std::vector<int32_t> short_block = {1};
  forged = a.get();
  forged.tokens = short_block;
  EXPECT_FALSE(c.find(forged));
  EXPECT_TRUE(c.find(a.get()));
}

TEST(StateCache, ReleaseFreesOnlyTheStateItNames) {
  StateCache c(0, 1, 2);
  const Key a{{1, 2}}, b{{3, 4}};
  const int32_t s = *c.take(a.get());
  c.publish(s);
  c.release(s, b.get().hash);  // another prefix's hash: left alone
  EXPECT_TRUE(c.contains(a.get()));
  c.release(s, a.get().hash);
  EXPECT_FALSE(c.contains(a.get()));
  EXPECT_EQ(c.n_cached(), 0);
  StateCache none;
  EXPECT_FALSE(none.take(a.get()));
  EXPECT_FALSE(none.find(a.get()));
}

}  // namespace
}  // namespace ridge::kv
