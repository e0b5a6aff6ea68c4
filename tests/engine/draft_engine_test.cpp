// Speculative decoding by a draft model inside the engine (SpecMethod::kDraft): every request's
// tokens (greedy, sampled seed for seed, logprobs) equal plain decoding's, with batching,
// chunked prompts that the draft catches up on over several steps, preemption and the prefix
// cache, with a draft that mostly agrees and one whose pool is too small; the draft's blocks all
// come back when the requests end (the fake runner checks every slot it reads holds the
// position it expects, so a stale draft cache fails the run). On real weights a model's Q8_0
// copy drafts for it with the same outputs.
#include <gtest/gtest.h>

#include <random>

#include "engine/engine.h"
#include "fake_runner.h"
#include "spec_jobs.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

using testing::FakeRunner;
using namespace testing::spec_jobs;

// Greedy drafts verified by the request's own draw (seed for seed the same outputs).
std::unique_ptr<Engine> draft_engine(int32_t n_blocks, int32_t draft_blocks, EngineOptions o, int32_t n_vocab,
                                     int64_t disagree_every) {
  o.spec = SpecMethod::kDraft;
  o.spec_rejection = false;
  auto draft = std::make_unique<FakeRunner>(draft_blocks, 4, n_vocab);
  draft->disagree_every = disagree_every;
  auto e = Engine::create(std::make_unique<FakeRunner>(n_blocks, 4, n_vocab), nullptr, o, std::move(draft));
  EXPECT_TRUE(e.ok()) << e.status().message();
  return std::move(e).value();
}

TEST(DraftEngine, OutputsUnchangedWithBatchingCatchUpPreemptionAndPrefixCache) {
  constexpr int32_t kVocab = 50;
  std::mt19937 rng(5);
  std::vector<Job> jobs = repetitive_jobs(rng, 60, kVocab);
  for (size_t i = 0; i < jobs.size(); i += 4) {  // long prompts: the draft catches up in chunks
    for (int t = 0; t < 50; ++t) jobs[i].prompt.push_back((t * 3 + static_cast<int>(i)) % kVocab);
  }
  EngineOptions o;
  o.max_batched_tokens = 24;
  o.max_seqs = 12;
  o.max_model_len = 128;
  o.spec_max = 5;
  o.spec_cost_rule = false;  // counts below that do not depend on step times
  auto plain = fake_engine(64, o, kVocab);  // 256 slots for 12 sequences: preemption
  const std::vector<Output> expected = run_jobs(*plain, jobs);
  auto spec = draft_engine(64, 64, o, kVocab, 4);
  const std::vector<Output> got = run_jobs(*spec, jobs);
  expect_same(got, expected);
  const EngineStats st = spec->stats();
  EXPECT_GT(st.n_preemptions, 0);
  EXPECT_GT(st.prefix_cache_hit_rate, 0);
  EXPECT_GT(st.n_draft_steps, 0);
  EXPECT_GT(st.n_accepted_tokens, st.n_draft_tokens / 2);  // the draft mostly agrees
  EXPECT_LT(st.n_accepted_tokens, st.n_draft_tokens);
  EXPECT_LT(st.n_steps, plain->stats().n_steps);
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_EQ(st.draft_blocks_used, 0);
  int64_t accepted = 0;
  for (const Output& out : got) accepted += out.stats.n_accepted_tokens;
  EXPECT_EQ(accepted, st.n_accepted_tokens);
}

TEST(DraftEngine, ADraftPoolTooSmallDraftsLessAndChangesNothing) {
  constexpr int32_t kVocab = 50;
  std::mt19937 rng(8);
  const std::vector<Job> jobs = repetitive_jobs(rng, 30, kVocab);
  EngineOptions o;
  o.max_seqs = 8;
  o.max_model_len = 96;
  o.spec_cost_rule = false;
  auto plain = fake_engine(256, o, kVocab);
  const std::vector<Output> expected = run_jobs(*plain, jobs);
  auto spec = draft_engine(256, 12, o, kVocab, 0);  // 48 draft slots for 8 sequences of up to 96
  expect_same(run_jobs(*spec, jobs), expected);
  const EngineStats st = spec->stats();
  EXPECT_GT(st.n_draft_tokens, 0);
  EXPECT_EQ(st.n_accepted_tokens, st.n_draft_tokens);  // the same runner: every draft right
  EXPECT_EQ(st.draft_blocks_used, 0);
}

TEST(DraftEngine, RealModelWithItsQ8CopyAsDraft) {
  const testing::TinyModel& tm = testing::tiny_model("tiny-qwen3", "f32");
  const testing::TinyModel& draft = testing::tiny_model("tiny-qwen3", "q8_0");
  std::mt19937 rng(3);
  std::vector<Job> jobs = repetitive_jobs(rng, 12, static_cast<int32_t>(tm.model->config().n_vocab));
  for (Job& j : jobs) j.max_tokens = 24;
  EngineOptions o;
  o.max_model_len = 128;
  o.max_seqs = 6;
  o.kv_bytes = 1 << 22;
  o.spec_cost_rule = false;
  auto plain = Engine::create(*tm.model, tm.tokenizer.get(), o);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  const std::vector<Output> expected = run_jobs(**plain, jobs);
  o.spec = SpecMethod::kDraft;
  o.spec_rejection = false;
  o.draft_model = draft.model.get();
  auto spec = Engine::create(*tm.model, tm.tokenizer.get(), o);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  // The banner counts the draft model's weights and its KV pool (as large in tokens as the
  // target's; the same shapes here, so the same bytes).
  const MemoryBudget& b = (*spec)->budget();
  EXPECT_EQ(b.draft_weight_bytes, draft.model->file().file_size());
  EXPECT_EQ(b.draft_kv_bytes, b.kv_bytes);
  EXPECT_NE(format_budget(b).find("draft model: weights"), std::string::npos) << format_budget(b);
  expect_same(run_jobs(**spec, jobs), expected);
  const EngineStats st = (*spec)->stats();
  EXPECT_GT(st.n_accepted_tokens, st.n_draft_tokens / 2);
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_EQ(st.draft_blocks_used, 0);
}

TEST(DraftEngine, RefusedWithoutADraftOrWithAnotherVocabulary) {
  EngineOptions o;
  o.spec = SpecMethod::kDraft;
  EXPECT_TRUE(Engine::create(std::make_unique<FakeRunner>(64, 4, 8), nullptr, o).status().is_usage());
  auto other = Engine::create(std::make_unique<FakeRunner>(64, 4, 8), nullptr, o, std::make_unique<FakeRunner>(64, 4, 9));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("9 rows"), std::string::npos) << other.status().message();
  o.spec = SpecMethod::kNgram;
  EXPECT_TRUE(Engine::create(std::make_unique<FakeRunner>(64, 4, 8), nullptr, o, std::make_unique<FakeRunner>(64, 4, 8))
                  .status().is_usage());
  const testing::TinyModel& tm = testing::tiny_model("tiny-qwen3", "f32");
  o.spec = SpecMethod::kDraft;
  o.kv_bytes = 1 << 22;
  o.max_model_len = 64;
  EXPECT_TRUE(Engine::create(*tm.model, nullptr, o).status().is_usage());  // no draft_model
}

}  // namespace
}  // namespace ridge::engine
