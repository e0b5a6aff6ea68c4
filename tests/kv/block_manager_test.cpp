#include "kv/block_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace ridge::kv {
namespace {

constexpr int32_t kBs = 4;

std::vector<int32_t> range(int32_t first, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A sequence whose whole prompt is computed and published.
BlockTable prefill(BlockManager& m, const std::vector<int32_t>& prompt) {
  BlockTable t;
  EXPECT_TRUE(m.allocate_sequence(t, prompt).ok());
  m.cache_computed(t, prompt, static_cast<int32_t>(prompt.size()));
  return t;
}

TEST(BlockManager, PromptGetsCeilBlocksAndSlotsFollowBlockIds) {
  BlockManager m(8, kBs);
  BlockTable t;
  ASSERT_TRUE(m.allocate_sequence(t, range(0, 10)).ok());
  ASSERT_EQ(t.blocks.size(), 3u);  // ceil(10 / 4)
  EXPECT_EQ(t.n_tokens, 10);
  EXPECT_EQ(t.n_cached_tokens, 0);
  for (int32_t pos = 0; pos < 10; ++pos) {
    EXPECT_EQ(m.slot(t, pos), int64_t{t.blocks[static_cast<size_t>(pos / kBs)]} * kBs + pos % kBs);
  }
  EXPECT_EQ(m.pool().n_free(), 5);
  m.free_sequence(t);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(m.pool().n_free(), 8);
}

TEST(BlockManager, SharedPrefixIsReusedWithRefcounts) {
  BlockManager m(16, kBs);
  const auto a_prompt = range(0, 12);
  BlockTable a = prefill(m, a_prompt);
  const auto b_prompt = concat(a_prompt, range(100, 5));
  const PrefixMatch match = m.find_cached_prefix(b_prompt);
  EXPECT_EQ(match.n_tokens, 12);
  BlockTable b;
  ASSERT_TRUE(m.allocate_sequence(b, b_prompt).ok());
  EXPECT_EQ(b.n_cached_tokens, 12);
  EXPECT_EQ(b.n_tokens, 17);
  ASSERT_EQ(b.blocks.size(), 5u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(b.blocks[i], a.blocks[i]);
    EXPECT_EQ(m.pool().ref_count(a.blocks[i]), 2);
  }
  EXPECT_EQ(m.pool().ref_count(b.blocks[3]), 1);
  EXPECT_EQ(m.pool().stats().n_query_tokens, 12 + 17);
  EXPECT_EQ(m.pool().stats().n_hit_tokens, 12);
  m.free_sequence(a);
  EXPECT_EQ(m.pool().ref_count(b.blocks[0]), 1);
  m.free_sequence(b);
  EXPECT_EQ(m.pool().n_free(), 16);
  EXPECT_TRUE(m.pool().check_invariants());
}

TEST(BlockManager, FullyCachedPromptStillComputesItsLastToken) {
  BlockManager m(16, kBs);
  const auto prompt = range(0, 12);
  BlockTable a = prefill(m, prompt);
  // 12 tokens: the third block ends with the last token, so only two blocks may be reused.
  const PrefixMatch match = m.find_cached_prefix(prompt);
  EXPECT_EQ(match.n_tokens, 8);
  BlockTable b;
  ASSERT_TRUE(m.allocate_sequence(b, prompt).ok());
  EXPECT_EQ(b.n_cached_tokens, 8);
  EXPECT_NE(b.blocks[2], a.blocks[2]);  // written privately
  // A one-token prompt has nothing to reuse.
  EXPECT_EQ(m.find_cached_prefix(range(0, 1)).n_tokens, 0);
  EXPECT_EQ(m.find_cached_prefix({}).n_tokens, 0);
}

TEST(BlockManager, SameBlockContentAfterDifferentPrefixIsAMiss) {
  BlockManager m(16, kBs);
  BlockTable a = prefill(m, concat(range(0, 4), range(50, 4)));
  // Second block equal to a's second block, first block different.
  const auto c_prompt = concat(concat(range(10, 4), range(50, 4)), range(90, 1));
  EXPECT_EQ(m.find_cached_prefix(c_prompt).n_tokens, 0);
  // While the true prefix hits both.
  EXPECT_EQ(m.find_cached_prefix(concat(concat(range(0, 4), range(50, 4)), {7})).n_tokens, 8);
}

TEST(BlockManager, PrefixCachingOffNeverMatches) {
  BlockManager m(16, kBs, /*prefix_caching=*/false);
  const auto prompt = range(0, 12);
  BlockTable a = prefill(m, prompt);
  EXPECT_EQ(m.pool().n_cached(), 0);
  EXPECT_EQ(m.find_cached_prefix(concat(prompt, {1})).n_tokens, 0);
}

TEST(BlockManager, FreedPrefixStaysCachedAndTailIsEvictedFirst) {
  BlockManager m(4, kBs);
  const auto prompt = range(0, 12);
  BlockTable a = prefill(m, prompt);
  m.free_sequence(a);
  EXPECT_EQ(m.pool().n_free(), 4);
  EXPECT_EQ(m.pool().n_cached(), 3);
  // Two unrelated blocks: the never-used block, then a's LAST block (least valuable).
  BlockTable other;
  ASSERT_TRUE(m.allocate(other, 2 * kBs).ok());
  EXPECT_EQ(m.pool().stats().n_evictions, 1);
  EXPECT_EQ(m.find_cached_prefix(concat(prompt, {1})).n_tokens, 8);
}

TEST(BlockManager, CanAllocateCountsRevivedCacheHits) {
  BlockManager m(4, kBs);
  const auto prompt = range(0, 12);
  BlockTable a = prefill(m, prompt);
  m.free_sequence(a);  // 3 cached free blocks + 1 never used
  BlockTable e;
  ASSERT_TRUE(m.allocate(e, 1).ok());  // takes the never-used block
  EXPECT_EQ(m.pool().n_free(), 3);
  // 13 tokens: 3 hits (all free) + 1 fresh = 4 blocks out of the queue, only 3 there.
  const auto b_prompt = concat(prompt, {99});
  EXPECT_EQ(m.find_cached_prefix(b_prompt).n_tokens, 12);
  EXPECT_FALSE(m.can_allocate_sequence(b_prompt));
  BlockTable b;
  const Status s = m.allocate_sequence(b, b_prompt);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(m.pool().n_free(), 3);
  EXPECT_EQ(m.pool().n_cached(), 3);
  EXPECT_TRUE(m.pool().check_invariants());
  // With e gone it fits: exactly the 3 hits + the freed block.
  m.free_sequence(e);
  EXPECT_TRUE(m.can_allocate_sequence(b_prompt));
  ASSERT_TRUE(m.allocate_sequence(b, b_prompt).ok());
  EXPECT_EQ(b.n_cached_tokens, 12);
  EXPECT_EQ(m.pool().n_free(), 0);
}

TEST(BlockManager, ExhaustionIsReportedAndChangesNothing) {
  BlockManager m(2, kBs);
  EXPECT_FALSE(m.can_allocate_sequence(range(0, 9)));  // 3 blocks
  BlockTable t;
  EXPECT_FALSE(m.allocate_sequence(t, range(0, 9)).ok());
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(m.pool().n_free(), 2);
  ASSERT_TRUE(m.allocate_sequence(t, range(0, 8)).ok());
  EXPECT_FALSE(m.can_append(t));
  auto r = m.append_slot(t);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(t.n_tokens, 8);
  EXPECT_EQ(t.blocks.size(), 2u);
}

TEST(BlockManager, AppendCrossesBlockBoundaries) {
  BlockManager m(4, kBs);
  BlockTable t;
  ASSERT_TRUE(m.allocate_sequence(t, range(0, 3)).ok());
  EXPECT_EQ(m.pool().n_free(), 3);
  EXPECT_TRUE(m.can_append(t));
  auto s3 = m.append_slot(t);  // position 3: fills the first block
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ(*s3, int64_t{t.blocks[0]} * kBs + 3);
  EXPECT_EQ(m.pool().n_free(), 3);
  auto s4 = m.append_slot(t);  // position 4: a new block
  ASSERT_TRUE(s4.ok());
  ASSERT_EQ(t.blocks.size(), 2u);
  EXPECT_EQ(*s4, int64_t{t.blocks[1]} * kBs);
  EXPECT_EQ(m.pool().n_free(), 2);
  EXPECT_EQ(t.n_tokens, 5);
}

TEST(BlockManager, GeneratedTokensArePublishedToo) {
  BlockManager m(8, kBs);
  std::vector<int32_t> tokens = range(0, 3);
  BlockTable t;
  ASSERT_TRUE(m.allocate_sequence(t, tokens).ok());
  for (int32_t next : {40, 41, 42, 43, 44, 45}) {
    ASSERT_TRUE(m.append_slot(t).ok());
    tokens.push_back(next);
    m.cache_computed(t, tokens, t.n_tokens);
  }
  EXPECT_EQ(t.hashes.size(), 2u);  // 9 tokens: two full blocks
  EXPECT_EQ(m.find_cached_prefix(concat(tokens, {1})).n_tokens, 8);
}

TEST(BlockManager, ChunkedPrefillPublishesOnlyComputedBlocks) {
  BlockManager m(16, kBs);
  const auto prompt = range(0, 20);
  BlockTable t;
  const PrefixMatch none = m.find_cached_prefix(prompt);
  ASSERT_EQ(none.n_tokens, 0);
  ASSERT_TRUE(m.allocate(t, 6, none).ok());  // chunk 1: positions 0..5
  EXPECT_EQ(t.blocks.size(), 2u);
  m.cache_computed(t, prompt, 6);
  EXPECT_EQ(t.hashes.size(), 1u);  // block 1 (positions 4..7) is not full yet
  EXPECT_EQ(m.find_cached_prefix(prompt).n_tokens, 4);
  ASSERT_TRUE(m.allocate(t, 6).ok());  // chunk 2: positions 6..11
  EXPECT_EQ(t.blocks.size(), 3u);
  EXPECT_EQ(t.n_tokens, 12);
  // Slots reserved but not computed yet: nothing new is published.
  m.cache_computed(t, prompt, 6);
  EXPECT_EQ(m.find_cached_prefix(prompt).n_tokens, 4);
  m.cache_computed(t, prompt, 12);
  EXPECT_EQ(m.find_cached_prefix(prompt).n_tokens, 12);
  ASSERT_TRUE(m.allocate(t, 8).ok());  // last chunk
  m.cache_computed(t, prompt, 20);
  EXPECT_EQ(t.hashes.size(), 5u);
  // Another request with the same prompt reuses all but the last block.
  EXPECT_EQ(m.find_cached_prefix(prompt).n_tokens, 16);
}

}  // namespace
}  // namespace ridge::kv
