// Randomized stress test of BlockManager with a simulated KV store: every slot records which
// (token, position) was written into it, so any wrong prefix reuse, any write into a shared
// block or any leaked block shows up.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>
#include <vector>

#include "kv/block_manager.h"

namespace ridge::kv {
namespace {

struct Seq {
  std::vector<int32_t> tokens;
  BlockTable table;
};

class Harness {
 public:
  Harness(int32_t n_blocks, int32_t bs, bool caching)
      : m_(n_blocks, bs, caching),
        store_(static_cast<size_t>(n_blocks) * static_cast<size_t>(bs), {-1, -1}) {}

  BlockManager& manager() { return m_; }
  std::vector<Seq>& seqs() { return seqs_; }

  // "Runs the forward" for positions [first, n_tokens): writes them, never into shared blocks.
  void compute(Seq& s, int32_t first) {
    for (int32_t pos = first; pos < s.table.n_tokens; ++pos) {
      const int64_t slot = m_.slot(s.table, pos);
      const BlockId block = static_cast<BlockId>(slot / m_.block_size());
      ASSERT_EQ(m_.pool().ref_count(block), 1) << "write into a shared block";
      store_[static_cast<size_t>(slot)] = {s.tokens[static_cast<size_t>(pos)], pos};
    }
    m_.cache_computed(s.table, s.tokens, s.table.n_tokens);
  }

  // Cached positions must hold exactly this sequence's tokens.
  void check_reused(const Seq& s) {
    for (int32_t pos = 0; pos < s.table.n_cached_tokens; ++pos) {
      const auto& cell = store_[static_cast<size_t>(m_.slot(s.table, pos))];
      ASSERT_EQ(cell.first, s.tokens[static_cast<size_t>(pos)]) << "pos " << pos;
      ASSERT_EQ(cell.second, pos);
    }
  }

  // Every block's reference count equals the number of live tables holding it.
  void check_refcounts() {
    std::map<BlockId, int32_t> held;
    for (const Seq& s : seqs_) {
      for (BlockId b : s.table.blocks) ++held[b];
    }
    for (BlockId b = 0; b < m_.pool().n_blocks(); ++b) {
      const auto it = held.find(b);
      ASSERT_EQ(m_.pool().ref_count(b), it == held.end() ? 0 : it->second) << "block " << b;
    }
    ASSERT_TRUE(m_.pool().check_invariants());
  }

 private:
  BlockManager m_;
  std::vector<std::pair<int32_t, int32_t>> store_;
  std::vector<Seq> seqs_;
};

void stress(bool caching, uint32_t seed) {
  constexpr int32_t kBlocks = 20;
  constexpr int32_t kBs = 4;
  Harness h(kBlocks, kBs, caching);
  BlockManager& m = h.manager();
  std::mt19937 rng(seed);
  auto uniform = [&](int32_t lo, int32_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng);
  };
  // A few shared system prompts; tiny vocabulary so equal blocks under other parents occur.
  std::vector<std::vector<int32_t>> bases(3);
  for (auto& b : bases) {
    for (int i = 0; i < 16; ++i) b.push_back(uniform(0, 2));
  }
  int n_admitted = 0, n_rejected = 0;
  for (int step = 0; step < 4000; ++step) {
    auto& seqs = h.seqs();
    const int action = uniform(0, 9);
    if (action < 3 && seqs.size() < 10) {  // admit a new prompt
      Seq s;
      const auto& base = bases[static_cast<size_t>(uniform(0, 2))];
      s.tokens.assign(base.begin(), base.begin() + uniform(0, 16));
      for (int i = uniform(s.tokens.empty() ? 1 : 0, 10); i > 0; --i) s.tokens.push_back(uniform(0, 2));
      const int32_t n_free = m.pool().n_free();
      const bool can = m.can_allocate_sequence(s.tokens);
      const Status st = m.allocate_sequence(s.table, s.tokens);
      ASSERT_EQ(can, st.ok());
      if (!st.ok()) {
        ASSERT_TRUE(s.table.empty());
        ASSERT_EQ(m.pool().n_free(), n_free);
        ++n_rejected;
      } else {
        ++n_admitted;
        h.check_reused(s);
        h.compute(s, s.table.n_cached_tokens);
        seqs.push_back(std::move(s));
      }
    } else if (action < 8 && !seqs.empty()) {  // decode one token
      Seq& s = seqs[static_cast<size_t>(uniform(0, static_cast<int32_t>(seqs.size()) - 1))];
      const bool can = m.can_append(s.table);
      const int32_t n_before = s.table.n_tokens;
      auto slot = m.append_slot(s.table);
      ASSERT_EQ(can, slot.ok());
      if (slot.ok()) {
        ASSERT_EQ(*slot, m.slot(s.table, n_before));
        s.tokens.push_back(uniform(0, 2));
        h.compute(s, n_before);
      } else {
        ASSERT_EQ(s.table.n_tokens, n_before);
        ++n_rejected;
      }
    } else if (!seqs.empty()) {  // finish / preempt one
      const auto i = static_cast<size_t>(uniform(0, static_cast<int32_t>(seqs.size()) - 1));
      m.free_sequence(seqs[i].table);
      seqs.erase(seqs.begin() + static_cast<ptrdiff_t>(i));
    }
    h.check_refcounts();
    if (testing::Test::HasFatalFailure()) return;
  }
  for (Seq& s : h.seqs()) m.free_sequence(s.table);
  h.seqs().clear();
  h.check_refcounts();
  EXPECT_EQ(m.pool().n_free(), kBlocks);
  EXPECT_GT(n_admitted, 100);
  EXPECT_GT(n_rejected, 0);  // the pool did run out at times (admission or decode)
  if (caching) {
    EXPECT_GT(m.pool().stats().n_hit_tokens, 0);
    EXPECT_GT(m.pool().stats().n_evictions, 0);
  } else {
    EXPECT_EQ(m.pool().stats().n_hit_tokens, 0);
  }
}

TEST(BlockManagerStress, RandomWorkloadWithPrefixCaching) {
  for (uint32_t seed : {1u, 2u, 3u}) stress(true, seed);
}

TEST(BlockManagerStress, RandomWorkloadWithoutPrefixCaching) { stress(false, 4); }

}  // namespace
}  // namespace ridge::kv
