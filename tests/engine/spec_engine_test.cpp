// Speculative decoding inside the engine (EngineOptions::spec): every request's tokens, greedy or
// sampled (seed for seed, logprobs included), equal what the engine gives without speculation,
// with batching, chunked prefill (drafts beside prompt chunks), preemption and the prefix cache;
// rejected drafts leave no blocks behind and never reach the prefix cache; bad values refused.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/engine.h"
#include "fake_runner.h"
#include "spec_jobs.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

using testing::FakeRunner;
using namespace testing::spec_jobs;

TEST(SpecEngine, OutputsUnchangedWithBatchingPreemptionAndPrefixCache) {
  constexpr int32_t kVocab = 6;
  std::mt19937 rng(11);
  const std::vector<Job> jobs = repetitive_jobs(rng, 60, kVocab);
  EngineOptions o;
  o.max_batched_tokens = 24;  // chunked prompts
  o.max_seqs = 12;
  o.max_model_len = 96;
  auto plain = fake_engine(48, o, kVocab);  // 192 slots for 12 sequences: preemption
  const std::vector<Output> expected = run_jobs(*plain, jobs);
  o.spec = SpecMethod::kNgram;
  o.spec_max = 6;
  o.spec_cost_rule = false;  // counts below that do not depend on step times
  auto spec = fake_engine(48, o, kVocab);
  const std::vector<Output> got = run_jobs(*spec, jobs);
  expect_same(got, expected);
  const EngineStats st = spec->stats();
  EXPECT_GT(st.n_preemptions, 0);
  EXPECT_GT(st.prefix_cache_hit_rate, 0);
  EXPECT_GT(st.n_accepted_tokens, 0);
  EXPECT_LT(st.n_accepted_tokens, st.n_draft_tokens);
  // Drafts beside prompt chunks too (the chunks take at most 16 tokens while others decode).
  EXPECT_GT(st.n_draft_tokens_mixed, 0);
  EXPECT_LT(st.n_draft_tokens_mixed, st.n_draft_tokens);
  EXPECT_EQ(st.kv_blocks_used, 0);  // rejected drafts' blocks came back
  EXPECT_EQ(st.n_running + st.n_waiting, 0);
  // Fewer forward steps for the same tokens, and per-request statistics that add up.
  EXPECT_LT(st.n_steps, plain->stats().n_steps);
  EXPECT_EQ(st.n_generated_tokens, plain->stats().n_generated_tokens);
  int64_t drafted = 0, accepted = 0;
  for (const Output& out : got) {
    drafted += out.stats.n_draft_tokens;
    accepted += out.stats.n_accepted_tokens;
  }
  EXPECT_EQ(drafted, st.n_draft_tokens);
  EXPECT_EQ(accepted, st.n_accepted_tokens);
}

// A second wave whose prompts extend the first wave's texts reuses their cached blocks: a block
// published with a rejected draft's token in it would change the fake runner's output.
TEST(SpecEngine, PrefixCacheHoldsOnlyAcceptedTokens) {
  constexpr int32_t kVocab = 5;
  std::mt19937 rng(5);
  std::vector<Job> first = repetitive_jobs(rng, 16, kVocab);
  for (Job& j : first) j.max_tokens = 30;
  EngineOptions o;
  o.max_model_len = 160;
  o.spec = SpecMethod::kNgram;
  auto spec = fake_engine(400, o, kVocab);
  const std::vector<Output> out1 = run_jobs(*spec, first);
  std::vector<Job> second;
  for (size_t i = 0; i < first.size(); ++i) {
    Job j = first[i];
    j.prompt.insert(j.prompt.end(), out1[i].tokens.begin(), out1[i].tokens.end());
    j.prompt.push_back(static_cast<int32_t>(i % kVocab));
    j.max_tokens = 8;
    second.push_back(std::move(j));
  }
  const std::vector<Output> got = run_jobs(*spec, second);
  EXPECT_GT(spec->stats().n_cached_tokens, 16 * 16);
  EngineOptions plain_opts = o;
  plain_opts.spec = SpecMethod::kNone;
  plain_opts.prefix_caching = false;
  auto plain = fake_engine(400, plain_opts, kVocab);
  expect_same(got, run_jobs(*plain, second));
}

// On a real (tiny, synthetic) model: greedy and sampled tokens with speculation equal plain
// decoding's, for f16 and q8_0 KV, batched.
TEST(SpecEngine, RealModelOutputsUnchanged) {
  const testing::TinyModel& tm = testing::tiny_model("tiny-qwen3", "f32");
  const auto n_vocab = static_cast<int32_t>(tm.model->config().n_vocab);
  std::mt19937 rng(3);
  std::vector<Job> jobs = repetitive_jobs(rng, 12, n_vocab);
  for (Job& j : jobs) j.max_tokens = 24;
  for (kv::KvType kv : {kv::KvType::kF16, kv::KvType::kQ8_0}) {
    EngineOptions o;
    o.max_model_len = 128;
    o.max_seqs = 6;
    o.max_batched_tokens = 48;
    o.kv_type = kv;
    o.kv_bytes = 1 << 22;
    auto plain = Engine::create(*tm.model, tm.tokenizer.get(), o);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    const std::vector<Output> expected = run_jobs(**plain, jobs);
    o.spec = SpecMethod::kNgram;
    auto spec = Engine::create(*tm.model, tm.tokenizer.get(), o);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    expect_same(run_jobs(**spec, jobs), expected);
    EXPECT_GT((*spec)->stats().n_draft_tokens, 0) << kv::kv_type_name(kv);
    EXPECT_EQ((*spec)->stats().kv_blocks_used, 0);
  }
}

// A request's prediction (OpenAI's Predicted Outputs) drafts without --spec: a right prediction
// is accepted nearly whole, an edited one re-syncs after the edit, a wrong one changes nothing.
TEST(SpecEngine, PredictionsDraftWithoutSpecAndChangeNoOutput) {
  constexpr int32_t kVocab = 50;
  std::mt19937 rng(9);
  std::vector<Job> jobs = repetitive_jobs(rng, 12, kVocab);
  for (Job& j : jobs) j.max_tokens = 40;
  EngineOptions o;
  o.max_model_len = 128;
  o.spec_cost_rule = false;  // counts below that do not depend on step times
  auto plain = fake_engine(512, o, kVocab);
  const std::vector<Output> expected = run_jobs(*plain, jobs);
  EXPECT_EQ(plain->stats().n_draft_tokens, 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::vector<int32_t>& p = jobs[i].prediction;
    p = expected[i].tokens;
    if (i % 3 == 1 && p.size() > 20) p[12] = (p[12] + 1) % kVocab;  // an edit
    if (i % 3 == 2) {
      for (int32_t& t : p) t = static_cast<int32_t>(rng() % kVocab);  // wrong
    }
  }
  auto predicted = fake_engine(512, o, kVocab);
  const std::vector<Output> got = run_jobs(*predicted, jobs);
  expect_same(got, expected);
  // Right predictions give most tokens from drafts (how many depends on the draft lengths the
  // measured step times allow); wrong ones about none.
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i % 3 == 0) {
      EXPECT_GE(got[i].stats.n_accepted_tokens, 30) << i;
    } else if (i % 3 == 2) {
      EXPECT_LE(got[i].stats.n_accepted_tokens, 4) << i;
    }
  }
  EXPECT_EQ(predicted->stats().kv_blocks_used, 0);
  Request bad;
  bad.prompt_tokens = {1, 2};
  bad.prediction = {1, kVocab};
  EXPECT_TRUE(predicted->add_request(std::move(bad)).status().is_usage());
}

// Many sequences with long drafts: a step verifies at most kMaxDraftRowsPerStep draft rows (the
// logits rows a ModelRunner has beyond one per sequence).
TEST(SpecEngine, DraftRowsPerStepStayWithinTheRunnersRows) {
  constexpr int32_t kVocab = 4;
  std::mt19937 rng(1);
  std::vector<Job> jobs = repetitive_jobs(rng, 40, kVocab);
  for (Job& j : jobs) j.max_tokens = 30;
  EngineOptions o;
  o.max_seqs = 40;
  o.max_batched_tokens = 1024;
  o.max_model_len = 128;
  auto plain = fake_engine(2000, o, kVocab);
  const std::vector<Output> expected = run_jobs(*plain, jobs);
  o.spec = SpecMethod::kNgram;
  o.spec_cost_rule = false;
  auto runner = std::make_unique<FakeRunner>(2000, 4, kVocab);
  runner->max_outputs = o.max_seqs + kMaxDraftRowsPerStep;
  auto spec = Engine::create(std::move(runner), nullptr, o);
  ASSERT_TRUE(spec.ok());
  expect_same(run_jobs(**spec, jobs), expected);
  EXPECT_GT((*spec)->stats().n_draft_tokens, 0);
}

TEST(SpecEngine, RefusedForBadValues) {
  EngineOptions states;
  states.state_cache = -2;  // -1 (as many as max-seqs), 0 (off) or a count
  const Status s = Engine::create(std::make_unique<FakeRunner>(64, 4, 8), nullptr, states).status();
  EXPECT_TRUE(s.is_usage());
  EXPECT_NE(s.message().find("state cache -2"), std::string::npos) << s.message();
  EngineOptions bad;
  bad.spec = SpecMethod::kNgram;
  bad.spec_max = 0;
  EXPECT_TRUE(Engine::create(std::make_unique<FakeRunner>(64, 4, 8), nullptr, bad).status().is_usage());
  bad.spec_max = 4;
  bad.pooling = model::Pooling::kMean;
  EXPECT_TRUE(Engine::create(std::make_unique<FakeRunner>(64, 4, 8), nullptr, bad).status().is_usage());
}

}  // namespace
}  // namespace ridge::engine
