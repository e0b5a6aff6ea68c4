// Scheduler tests without a model: a simulated KV store records which (token, position) each
// slot holds, so every chunk can check that its context is intact (prefix cache, preemption and
// recompute included).
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace ridge::engine {
namespace {

struct Slot {
  int32_t token = -1;
  int32_t pos = -1;
};

struct Sim {
  Scheduler sched;
  std::vector<Slot> store;
  RequestId next_id = 1;
  int32_t max_batched_tokens;
  int32_t max_seqs;
  std::map<RequestId, int32_t> finished;  // id -> generated tokens
  std::vector<RequestId> scheduled;       // id of every chunk, in order

  Sim(int32_t n_blocks, int32_t block_size, int32_t budget, int32_t max_seqs_, bool caching = true,
      int32_t prefill_cap = 0)
      : sched({budget, max_seqs_, prefill_cap}, kv::BlockManager(n_blocks, block_size, caching)),
        store(static_cast<size_t>(n_blocks * block_size)),
        max_batched_tokens(budget),
        max_seqs(max_seqs_) {}

  RequestId add(std::vector<int32_t> prompt, int32_t max_tokens, int32_t priority = 0) {
    auto s = std::make_unique<Sequence>();
    s->id = next_id++;
    s->arrival_order = static_cast<uint64_t>(s->id);
    s->tokens = std::move(prompt);
    s->n_prompt = s->n_tokens();
    s->max_tokens = max_tokens;
    s->priority = priority;
    sched.add(std::move(s));
    return next_id - 1;
  }

  // Schedules and "runs" one step; returns the output for inspection.
  SchedulerOutput step() {
    SchedulerOutput out = sched.schedule();
    EXPECT_LE(out.n_tokens, max_batched_tokens);
    EXPECT_LE(sched.n_running(), max_seqs);
    int32_t total = 0;
    for (const ScheduledChunk& c : out.chunks) {
      const Sequence& s = *c.seq;
      total += c.n_new;
      scheduled.push_back(s.id);
      EXPECT_EQ(s.state, SeqState::kRunning);
      EXPECT_EQ(c.start, s.n_computed);
      EXPECT_LE(c.start + c.n_new, s.table.n_tokens);
      EXPECT_EQ(c.need_logits, c.start + c.n_new == s.n_tokens());
      const kv::BlockManager& bm = sched.blocks();
      for (int32_t p = 0; p < c.start; ++p) {  // context already in the cache must be intact
        const Slot& sl = store[static_cast<size_t>(bm.slot(s.table, p))];
        EXPECT_EQ(sl.pos, p) << "seq " << s.id;
        EXPECT_EQ(sl.token, s.tokens[static_cast<size_t>(p)]) << "seq " << s.id << " pos " << p;
      }
      for (int32_t p = c.start; p < c.start + c.n_new; ++p) {
        const kv::BlockId b = s.table.blocks[static_cast<size_t>(p / bm.block_size())];
        EXPECT_EQ(sched.blocks().pool().ref_count(b), 1) << "write into a shared block";
        store[static_cast<size_t>(bm.slot(s.table, p))] = {s.tokens[static_cast<size_t>(p)], p};
      }
    }
    EXPECT_EQ(total, out.n_tokens);
    sched.on_computed(out);
    for (const ScheduledChunk& c : out.chunks) {
      if (!c.need_logits) continue;
      Sequence& s = *c.seq;
      s.tokens.push_back((s.tokens.back() * 31 + s.n_tokens()) % 97);
      if (s.n_generated() >= s.max_tokens) {
        finished[s.id] = s.n_generated();
        sched.remove(s.id);
      }
    }
    EXPECT_TRUE(sched.blocks().pool().check_invariants());
    return out;
  }
};

std::vector<int32_t> iota_prompt(int32_t n, int32_t base = 0) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = (base + i) % 97;
  return p;
}

TEST(Scheduler, DecodesFirstThenPromptChunks) {
  Sim sim(64, 4, 16, 8);
  for (int i = 0; i < 3; ++i) sim.add(iota_prompt(5, i * 10), 100);
  sim.step();  // 3 prompts of 5 tokens = 15 <= 16
  EXPECT_EQ(sim.sched.n_running(), 3);
  const RequestId big = sim.add(iota_prompt(100, 50), 5);
  int steps = 0;
  while (sim.sched.find(big)->n_computed < 100 && steps < 20) {
    SchedulerOutput out = sim.step();
    ++steps;
    ASSERT_GE(out.chunks.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(out.chunks[static_cast<size_t>(i)].n_new, 1);  // decodes go first
    EXPECT_EQ(out.chunks.back().seq->id, big);
    EXPECT_LE(out.chunks.back().n_new, 13);
  }
  EXPECT_EQ(steps, 8);  // ceil(100 / 13)
}

// With sequences decoding, prompt chunks share at most max_prefill_with_decodes tokens a step;
// with nothing decoding a prompt gets the whole budget.
TEST(Scheduler, PromptTokensCappedWhileOthersDecode) {
  Sim sim(256, 4, 64, 8, true, /*prefill_cap=*/6);
  const RequestId first = sim.add(iota_prompt(40, 0), 100);
  SchedulerOutput out = sim.step();  // alone: the whole 40-token prompt in one chunk
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].seq->id, first);
  EXPECT_EQ(out.chunks[0].n_new, 40);
  const RequestId a = sim.add(iota_prompt(30, 100), 5);
  const RequestId b = sim.add(iota_prompt(30, 200), 5);
  for (int step = 0; step < 4; ++step) {
    out = sim.step();
    int32_t prompt_tokens = 0;
    for (const ScheduledChunk& c : out.chunks) {
      if (c.seq->id == a || c.seq->id == b) prompt_tokens += c.n_new;
    }
    EXPECT_EQ(out.chunks.front().seq->id, first);  // the decode goes first
    EXPECT_EQ(out.chunks.front().n_new, 1);
    EXPECT_EQ(prompt_tokens, 6) << "step " << step;
  }
}

TEST(Scheduler, MaxSeqsAndBudget) {
  Sim sim(256, 4, 64, 3);
  for (int i = 0; i < 10; ++i) sim.add(iota_prompt(10, i), 2);
  SchedulerOutput out = sim.step();
  EXPECT_EQ(out.chunks.size(), 3u);
  EXPECT_EQ(out.n_tokens, 30);
  while (!sim.sched.empty()) sim.step();
  EXPECT_EQ(sim.finished.size(), 10u);
  EXPECT_EQ(sim.sched.blocks().pool().n_used(), 0);
}

TEST(Scheduler, PriorityThenArrival) {
  Sim sim(256, 4, 8, 1);
  const RequestId a = sim.add(iota_prompt(4), 1, 5);
  const RequestId b = sim.add(iota_prompt(4, 1), 1, 0);
  const RequestId c = sim.add(iota_prompt(4, 2), 1, 5);
  const RequestId d = sim.add(iota_prompt(4, 3), 1, -1);
  while (!sim.sched.empty()) sim.step();
  EXPECT_EQ(sim.scheduled, (std::vector<RequestId>{d, b, a, c}));
}

TEST(Scheduler, PrefixCacheReusesComputedBlocks) {
  Sim sim(64, 4, 64, 8);
  std::vector<int32_t> shared = iota_prompt(16);
  std::vector<int32_t> p1 = shared, p2 = shared;
  p1.insert(p1.end(), {1, 2, 3});
  p2.insert(p2.end(), {4, 5});
  sim.add(p1, 3);
  sim.step();
  const RequestId second = sim.add(p2, 3);
  SchedulerOutput out = sim.step();
  const Sequence* s = sim.sched.find(second);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->stats.n_cached_prompt_tokens, 16);
  EXPECT_EQ(out.chunks.back().start, 16);
  EXPECT_EQ(out.chunks.back().n_new, 2);
  while (!sim.sched.empty()) sim.step();
}

TEST(Scheduler, PreemptsNewestAndRecomputes) {
  // 8 blocks of 4 slots: three sequences growing to 12 tokens cannot all stay resident.
  Sim sim(8, 4, 32, 8, /*caching=*/false);
  const RequestId a = sim.add(iota_prompt(4), 8);
  const RequestId b = sim.add(iota_prompt(4, 20), 8);
  const RequestId c = sim.add(iota_prompt(4, 40), 8);
  int64_t steps = 0;
  while (!sim.sched.empty() && steps < 500) {
    sim.step();
    ++steps;
  }
  EXPECT_TRUE(sim.sched.empty());
  EXPECT_GT(sim.sched.n_preemptions(), 0);
  for (RequestId id : {a, b, c}) EXPECT_EQ(sim.finished[id], 8);
  EXPECT_EQ(sim.sched.blocks().pool().n_used(), 0);
}

TEST(Scheduler, SelfPreemptionWhenAlone) {
  // The oldest sequence is never the victim while newer ones run: c (newest) goes first.
  Sim sim(6, 4, 32, 8, false);
  sim.add(iota_prompt(7), 10);
  sim.add(iota_prompt(7, 9), 10);
  sim.add(iota_prompt(3, 19), 10);
  std::vector<RequestId> first_preempted;
  for (int i = 0; i < 200 && !sim.sched.empty(); ++i) {
    const int64_t before = sim.sched.n_preemptions();
    sim.step();
    if (sim.sched.n_preemptions() > before && first_preempted.empty()) {
      for (RequestId id : sim.sched.ids()) {
        if (sim.sched.find(id)->stats.n_preemptions > 0) first_preempted.push_back(id);
      }
    }
  }
  EXPECT_TRUE(sim.sched.empty());
  ASSERT_FALSE(first_preempted.empty());
  EXPECT_EQ(first_preempted.front(), 3);
}

TEST(Scheduler, RandomizedStress) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    Sim sim(24, 4, 20, 6, /*caching=*/true);
    std::uniform_int_distribution<int> len(1, 30), gen(1, 20), coin(0, 9);
    int added = 0;
    for (int step = 0; step < 3000; ++step) {
      if (added < 400 && coin(rng) < 4) {
        // Shared prefixes from a small alphabet so cache hits and collisions of content happen.
        std::vector<int32_t> p(static_cast<size_t>(len(rng)));
        for (auto& t : p) t = coin(rng) < 7 ? 1 : coin(rng);
        sim.add(p, gen(rng), coin(rng) < 2 ? 1 : 0);
        ++added;
      }
      if (coin(rng) == 0) {  // abort someone
        auto ids = sim.sched.ids();
        if (!ids.empty()) sim.sched.remove(ids[static_cast<size_t>(rng() % ids.size())]);
      }
      if (!sim.sched.empty()) sim.step();
      if (::testing::Test::HasFailure()) return;
    }
    while (!sim.sched.empty()) sim.step();
    EXPECT_EQ(sim.sched.blocks().pool().n_used(), 0) << "seed " << seed;
    EXPECT_TRUE(sim.sched.blocks().pool().check_invariants());
  }
}

}  // namespace
}  // namespace ridge::engine

namespace ridge::engine {
namespace {

// A decode with a draft takes budget and blocks only where they are left; after verification
// the rejected drafts' blocks return to the pool and only kept tokens reach the prefix cache.
TEST(Scheduler, DraftsUseWhatIsLeftAndGiveRejectedSlotsBack) {
  Scheduler sched({8, 4, 0}, kv::BlockManager(6, 4, true));
  auto s = std::make_unique<Sequence>();
  s->id = 1;
  s->tokens = {1, 2, 3};
  s->n_prompt = 3;
  s->max_tokens = 20;
  Sequence* seq = s.get();
  sched.add(std::move(s));
  SchedulerOutput out = sched.schedule();  // the prompt
  sched.on_computed(out);
  seq->tokens.push_back(4);                // its first generated token
  out = sched.schedule();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].n_new, 1);
  const int32_t free_before = sched.blocks().pool().n_free();
  seq->draft = {5, 6, 7, 8, 9, 10, 11, 12};
  EXPECT_FALSE(sched.add_draft(out, out.chunks[0], 8));  // 1 + 8 tokens exceed the budget of 8
  EXPECT_EQ(out.chunks[0].n_new, 1);
  ASSERT_TRUE(sched.add_draft(out, out.chunks[0], 7));
  EXPECT_EQ(out.chunks[0].n_new, 8);
  EXPECT_EQ(out.chunks[0].n_draft, 7);
  EXPECT_EQ(out.n_tokens, 8);
  EXPECT_EQ(seq->table.n_tokens, 11);                    // positions 0..10: 3 blocks
  EXPECT_EQ(sched.blocks().pool().n_free(), free_before - 2);
  sched.on_computed(out);                                // skips the draft chunk
  EXPECT_EQ(seq->n_computed, 3);
  seq->tokens.insert(seq->tokens.end(), {5, 6, 99});     // two drafts accepted, then another token
  sched.on_verified(out.chunks[0], 3);                   // 4, 5, 6 kept
  EXPECT_EQ(seq->n_computed, 6);
  EXPECT_EQ(seq->table.n_tokens, 6);
  EXPECT_EQ(seq->table.blocks.size(), 2u);
  EXPECT_EQ(sched.blocks().pool().n_free(), free_before - 1);
  EXPECT_EQ(seq->table.hashes.size(), 1u);               // block 0 (1, 2, 3, 4) only
  // A pool without room for a draft's blocks: no draft, nothing preempted.
  seq->draft = std::vector<int32_t>(7, 1);
  out = sched.schedule();
  while (sched.blocks().pool().n_free() > 0) {
    kv::BlockTable t;
    ASSERT_TRUE(sched.blocks().allocate(t, 4).ok());
  }
  EXPECT_FALSE(sched.add_draft(out, out.chunks[0], 3));
  EXPECT_EQ(out.n_preempted, 0);
}

}  // namespace
}  // namespace ridge::engine
