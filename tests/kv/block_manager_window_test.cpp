// BlockManager with a window space (the sliding-window layers' K/V in blocks of their own):
// window blocks follow the main ones, go back once wholly before every later window, limit
// allocation when short, and a cached prefix is adopted only where its window is still cached.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/block_manager.h"

namespace ridge::kv {
namespace {
namespace window_space_test {

constexpr int32_t kBs = 4;
constexpr int32_t kWindow = 6;  // a position reads itself and the 5 before it

std::vector<int32_t> range(int32_t first, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

int32_t n_held(const BlockTable& t) {
  int32_t n = 0;
  for (BlockId id : t.window_blocks) n += id != kNoBlock ? 1 : 0;
  return n;
}

TEST(BlockManagerWindow, WindowBlocksFollowTheMainBlocks) {
  BlockManager m(16, kBs, true, {8, kWindow});
  ASSERT_NE(m.window_pool(), nullptr);
  BlockTable t;
  ASSERT_TRUE(m.allocate(t, 10).ok());
  ASSERT_EQ(t.blocks.size(), 3u);
  ASSERT_EQ(t.window_blocks.size(), 3u);
  for (int32_t pos = 0; pos < 10; ++pos) {
    EXPECT_EQ(m.window_slot(t, pos), int64_t{t.window_blocks[static_cast<size_t>(pos / kBs)]} * kBs + pos % kBs);
  }
  EXPECT_EQ(m.pool().n_free(), 13);
  EXPECT_EQ(m.window_pool()->n_free(), 5);
  m.free_sequence(t);
  EXPECT_EQ(m.pool().n_free(), 16);
  EXPECT_EQ(m.window_pool()->n_free(), 8);
  EXPECT_TRUE(m.window_pool()->check_invariants());
  EXPECT_EQ(BlockManager(4, kBs).window_pool(), nullptr);
}

TEST(BlockManagerWindow, BlocksWhollyBeforeTheWindowGoBack) {
  BlockManager m(16, kBs, false, {8, kWindow});
  BlockTable t;
  ASSERT_TRUE(m.allocate(t, 20).ok());  // 5 blocks
  // Computing from position 20 on reads positions 15.. : blocks 0-2 (positions 0-11) are out.
  m.release_out_of_window(t, 20);
  EXPECT_EQ(t.n_window_released, 3);
  EXPECT_EQ((std::vector<BlockId>(t.window_blocks.begin(), t.window_blocks.begin() + 3)),
            (std::vector<BlockId>(3, kNoBlock)));
  EXPECT_EQ(n_held(t), 2);
  EXPECT_EQ(m.window_pool()->n_free(), 6);
  EXPECT_EQ(m.pool().n_free(), 11);  // the global layers keep every position
  m.release_out_of_window(t, 20);    // nothing more
  EXPECT_EQ(m.window_pool()->n_free(), 6);
  m.release_out_of_window(t, 16);    // never takes a released block back
  EXPECT_EQ(t.n_window_released, 3);
  EXPECT_EQ(m.window_slot(t, 15), int64_t{t.window_blocks[3]} * kBs + 3);
  // Computing from 23 on reads 18.. : block 3 (positions 12-15) goes too.
  m.release_out_of_window(t, 23);
  EXPECT_EQ(t.n_window_released, 4);
  m.free_sequence(t);
  EXPECT_EQ(m.window_pool()->n_free(), 8);
  EXPECT_TRUE(m.window_pool()->check_invariants());
}

TEST(BlockManagerWindow, AShortWindowPoolRefusesAllocation) {
  BlockManager m(16, kBs, false, {3, kWindow});
  BlockTable t;
  EXPECT_FALSE(m.can_allocate(t, 16));  // 4 window blocks, 3 in the pool
  const Status s = m.allocate(t, 16);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "kv: out of window blocks: 16 tokens need 4, 3 free");
  EXPECT_TRUE(t.empty());
  ASSERT_TRUE(m.allocate(t, 12).ok());
  EXPECT_FALSE(m.can_allocate(t, 4));
  m.release_out_of_window(t, 12);  // reads 7.. : block 0 goes back
  EXPECT_TRUE(m.can_allocate(t, 4));
  ASSERT_TRUE(m.allocate(t, 4).ok());
  EXPECT_EQ(t.blocks.size(), 4u);
  EXPECT_EQ(n_held(t), 3);
}

TEST(BlockManagerWindow, TruncateGivesBackTheWindowBlocksToo) {
  BlockManager m(16, kBs, false, {8, kWindow});
  BlockTable t;
  ASSERT_TRUE(m.allocate(t, 20).ok());
  m.release_out_of_window(t, 20);
  m.truncate(t, 13);  // 4 blocks stay
  EXPECT_EQ(t.window_blocks.size(), 4u);
  EXPECT_EQ(m.window_pool()->n_free(), 7);
  EXPECT_EQ(m.pool().n_free(), 12);
}

// A prompt whose prefix was computed and published adopts it with the window blocks its next
// position reads, and nothing before them.
TEST(BlockManagerWindow, PrefixHitAdoptsOnlyTheWindowItReads) {
  BlockManager m(32, kBs, true, {16, kWindow});
  const std::vector<int32_t> a_prompt = range(0, 24);
  BlockTable a;
  ASSERT_TRUE(m.allocate_sequence(a, a_prompt).ok());
  m.cache_computed(a, a_prompt, 24);
  m.release_out_of_window(a, 24);
  m.free_sequence(a);
  std::vector<int32_t> b_prompt = range(0, 29);
  const PrefixMatch match = m.find_cached_prefix(b_prompt);
  EXPECT_EQ(match.n_tokens, 24);
  EXPECT_EQ(match.window_first, 4);  // position 24 reads 19.. : blocks 4 and 5
  BlockTable b;
  ASSERT_TRUE(m.allocate(b, 5, match).ok());
  EXPECT_EQ(b.n_tokens, 29);
  EXPECT_EQ(b.n_window_released, 4);
  ASSERT_EQ(b.window_blocks.size(), 8u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(b.window_blocks[i], kNoBlock);
  EXPECT_EQ(n_held(b), 4);  // 2 adopted, 2 fresh
  EXPECT_EQ(m.window_pool()->ref_count(b.window_blocks[4]), 1);
  m.free_sequence(b);
  EXPECT_TRUE(m.window_pool()->check_invariants());
  EXPECT_TRUE(m.pool().check_invariants());
}

// Where the window blocks of the longest match were evicted, the match is cut back to the
// longest prefix whose window is still cached (shorten), or to nothing.
TEST(BlockManagerWindow, MatchesAreCutToWhereTheWindowIsCached) {
  BlockManager m(32, kBs, true, {8, kWindow});
  PrefixMatch match;
  for (BlockId b = 0; b < 6; ++b) {
    match.blocks.push_back(b);
    match.hashes.push_back(static_cast<BlockHash>(b + 1));
    match.window_blocks.push_back(b);
  }
  match.window_blocks[5] = kNoBlock;  // block 5's window block was evicted
  PrefixMatch cut = match;
  m.shorten(cut, 6);
  EXPECT_EQ(cut.n_tokens, 20);   // 6 blocks need window blocks 4-5; 5 blocks need 3-4
  EXPECT_EQ(cut.window_first, 3);
  EXPECT_EQ(cut.blocks.size(), 5u);
  match.window_blocks[3] = kNoBlock;
  cut = match;
  m.shorten(cut, 6);
  EXPECT_EQ(cut.n_tokens, 12);   // 5 needs 3: no; 4 needs 2-3: no; 3 needs 1-2
  cut = match;
  m.shorten(cut, 2);             // a cap (the hybrid models' filter) below the window's cut
  EXPECT_EQ(cut.n_tokens, 8);
  EXPECT_EQ(cut.window_first, 0);
  match.window_blocks.assign(6, kNoBlock);
  m.shorten(match, 6);
  EXPECT_EQ(match.n_tokens, 0);
}

// A published sequence's window blocks are evicted by others' allocations (least recently
// released first); the next lookup is cut to nothing once its window is gone.
TEST(BlockManagerWindow, EvictedWindowBlocksEndTheHit) {
  BlockManager m(32, kBs, true, {8, kWindow});
  const std::vector<int32_t> prompt = range(0, 24);
  BlockTable a;
  ASSERT_TRUE(m.allocate_sequence(a, prompt).ok());
  m.cache_computed(a, prompt, 24);
  m.free_sequence(a);
  const std::vector<int32_t> again = range(0, 25);
  EXPECT_EQ(m.find_cached_prefix(again).n_tokens, 24);
  BlockTable c;
  ASSERT_TRUE(m.allocate(c, 32).ok());  // every window block, the cached ones evicted
  EXPECT_EQ(m.find_cached_prefix(again).n_tokens, 0);
  EXPECT_GT(m.pool().n_cached(), 0);     // the global layers' blocks are still cached
}

}  // namespace window_space_test
}  // namespace
}  // namespace ridge::kv
