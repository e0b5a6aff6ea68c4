#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "kv/block_hash.h"

namespace ridge::kv {
namespace {

constexpr int32_t kPoolBlockSize = 4;

std::vector<int32_t> toks(int32_t base) { return {base, base + 1, base + 2, base + 3}; }

// Caches block `id` with content toks(base) under the root parent; returns its hash.
BlockHash cache_block(BlockPool& pool, BlockId id, int32_t base) {
  const auto t = toks(base);
  const BlockHash h = hash_block(kRootBlockHash, t);
  EXPECT_TRUE(pool.cache(id, h, kRootBlockHash, t));
  return h;
}

TEST(BlockHash, ChainsParentAndContent) {
  const auto a = toks(10);
  const auto b = toks(20);
  const BlockHash ha = hash_block(kRootBlockHash, a);
  EXPECT_EQ(ha, hash_block(kRootBlockHash, a));  // deterministic
  EXPECT_NE(ha, hash_block(kRootBlockHash, b));
  // Same block content under different parents is a different block.
  EXPECT_NE(hash_block(ha, b), hash_block(hash_block(kRootBlockHash, toks(30)), b));
  EXPECT_NE(hash_block(kRootBlockHash, b), hash_block(ha, b));
  // Order of tokens matters.
  EXPECT_NE(hash_block(kRootBlockHash, std::vector<int32_t>{1, 2, 3, 4}),
            hash_block(kRootBlockHash, std::vector<int32_t>{2, 1, 3, 4}));
}

TEST(BlockPool, CreateRejectsNonPositiveSizes) {
  EXPECT_FALSE(BlockPool::create(0, 16).ok());
  EXPECT_FALSE(BlockPool::create(8, 0).ok());
  EXPECT_FALSE(BlockPool::create(-1, 16).ok());
  EXPECT_TRUE(BlockPool::create(1, 1).ok());
}

TEST(BlockPool, AllocatesEveryBlockOnceThenReportsExhaustion) {
  BlockPool pool(3, kPoolBlockSize);
  EXPECT_EQ(pool.n_free(), 3);
  EXPECT_TRUE(pool.can_allocate(3));
  EXPECT_FALSE(pool.can_allocate(4));
  std::vector<BlockId> got;
  for (int i = 0; i < 3; ++i) {
    auto id = pool.allocate();
    ASSERT_TRUE(id.has_value());
    EXPECT_EQ(pool.ref_count(*id), 1);
    got.push_back(*id);
  }
  EXPECT_EQ(got, (std::vector<BlockId>{0, 1, 2}));
  EXPECT_EQ(pool.n_free(), 0);
  EXPECT_FALSE(pool.can_allocate(1));
  EXPECT_FALSE(pool.allocate().has_value());
  EXPECT_TRUE(pool.check_invariants());
  for (BlockId id : got) pool.free(id);
  EXPECT_EQ(pool.n_free(), 3);
  EXPECT_TRUE(pool.check_invariants());
}

TEST(BlockPool, SharedBlockIsFreeOnlyAfterLastReference) {
  BlockPool pool(2, kPoolBlockSize);
  const BlockId id = *pool.allocate();
  pool.acquire(id);
  EXPECT_EQ(pool.ref_count(id), 2);
  pool.free(id);
  EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_EQ(pool.n_free(), 1);
  pool.free(id);
  EXPECT_EQ(pool.ref_count(id), 0);
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_TRUE(pool.check_invariants());
}

TEST(BlockPool, UncachedFreedBlockIsReusedBeforeNeverUsedOnes) {
  BlockPool pool(4, kPoolBlockSize);
  const BlockId a = *pool.allocate();  // 0
  pool.free(a);
  EXPECT_EQ(*pool.allocate(), a);  // back at the head, not behind 1, 2, 3
}

TEST(BlockPool, CachedBlocksAreEvictedLeastRecentlyFreedFirst) {
  BlockPool pool(4, kPoolBlockSize);
  std::vector<BlockHash> h(4);
  for (int32_t i = 0; i < 4; ++i) {
    ASSERT_EQ(*pool.allocate(), i);
    h[static_cast<size_t>(i)] = cache_block(pool, i, 100 * i);
  }
  for (BlockId id : {2, 0, 3, 1}) pool.free(id);
  EXPECT_EQ(pool.n_free(), 4);
  EXPECT_EQ(pool.n_cached(), 4);
  // Free blocks keep their content until a fresh block is needed.
  EXPECT_EQ(pool.find_cached(h[0], kRootBlockHash, toks(0)), BlockId{0});
  for (BlockId want : {2, 0, 3, 1}) {
    EXPECT_EQ(*pool.allocate(), want);
    EXPECT_FALSE(pool.find_cached(h[static_cast<size_t>(want)], kRootBlockHash,
                                  toks(100 * want)).has_value());
    EXPECT_FALSE(pool.cached_hash(want).has_value());
  }
  EXPECT_EQ(pool.stats().n_evictions, 4);
  EXPECT_EQ(pool.n_cached(), 0);
  EXPECT_TRUE(pool.check_invariants());
}

TEST(BlockPool, HitOnFreeCachedBlockRevivesItAndRefreshesItsAge) {
  BlockPool pool(3, kPoolBlockSize);
  for (int32_t i = 0; i < 3; ++i) cache_block(pool, *pool.allocate(), 10 * i);
  for (BlockId id : {0, 1, 2}) pool.free(id);  // LRU order 0, 1, 2
  pool.acquire(0);                              // a prompt hits block 0
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_TRUE(pool.check_invariants());
  pool.free(0);  // now the most recently used
  EXPECT_EQ(*pool.allocate(), 1);
  EXPECT_EQ(*pool.allocate(), 2);
  EXPECT_EQ(*pool.allocate(), 0);
}

TEST(BlockPool, FindCachedComparesTokensAndParentNotOnlyTheHash) {
  BlockPool pool(2, kPoolBlockSize);
  const BlockId id = *pool.allocate();
  const BlockHash h = cache_block(pool, id, 7);
  EXPECT_EQ(pool.find_cached(h, kRootBlockHash, toks(7)), id);
  // A (simulated) collision: same hash, other tokens or other parent.
  EXPECT_FALSE(pool.find_cached(h, kRootBlockHash, toks(8)).has_value());
  EXPECT_FALSE(pool.find_cached(h, kRootBlockHash + 1, toks(7)).has_value());
}

TEST(BlockPool, SecondBlockWithSameHashIsNotCached) {
  BlockPool pool(2, kPoolBlockSize);
  const BlockId a = *pool.allocate();
  const BlockId b = *pool.allocate();
  const BlockHash h = cache_block(pool, a, 1);
  EXPECT_FALSE(pool.cache(b, h, kRootBlockHash, toks(1)));
  EXPECT_FALSE(pool.cached_hash(b).has_value());
  EXPECT_FALSE(pool.cache(a, h + 1, kRootBlockHash, toks(1)));  // a already has an entry
  EXPECT_EQ(pool.n_cached(), 1);
  pool.free(b);  // uncached: head of the queue
  pool.free(a);  // cached: tail
  EXPECT_EQ(*pool.allocate(), b);
  EXPECT_EQ(pool.stats().n_evictions, 0);
}

TEST(BlockPool, ResetPrefixCacheDropsOnlyFreeBlocksEntries) {
  BlockPool pool(2, kPoolBlockSize);
  const BlockId a = *pool.allocate();
  const BlockId b = *pool.allocate();
  cache_block(pool, a, 1);
  cache_block(pool, b, 2);
  pool.free(a);
  pool.reset_prefix_cache();
  EXPECT_FALSE(pool.cached_hash(a).has_value());
  EXPECT_TRUE(pool.cached_hash(b).has_value());
  EXPECT_TRUE(pool.check_invariants());
}

}  // namespace
}  // namespace ridge::kv
