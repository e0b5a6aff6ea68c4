// Speculative decoding on a hybrid model (Qwen3.5's recurrent state): each draft token's state is
// snapshotted in the verification step, and the one after the last kept token becomes the
// sequence's (engine/recurrent_slots.h). Outputs and log-probabilities equal plain decoding's,
// greedy and sampled, with rejected drafts, batching, preemption and the prefix cache's states.
#include <gtest/gtest.h>

#include <random>

#include "spec_jobs.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

using testing::spec_jobs::expect_same;
using testing::spec_jobs::Job;
using testing::spec_jobs::run_jobs;

EngineOptions options(const model::Model& m, SpecMethod spec) {
  EngineOptions o;
  o.max_model_len = 96;
  o.max_seqs = 4;
  o.max_batched_tokens = 32;
  o.block_size = 16;
  o.n_threads = 2;
  // 10 blocks for four sequences of up to 5 blocks: some are preempted.
  o.kv_bytes = 10 * kv::kv_block_bytes(m.kv_config(1, kv::KvType::kF16, 16));
  o.spec = spec;
  o.spec_max = 4;
  o.spec_cost_rule = false;  // draft whatever is proposed: the counts do not depend on timing
  return o;
}

TEST(HybridSpec, DraftsChangeNoOutput) {
  const testing::TinyModel& tm = testing::tiny_model("tiny-qwen35", "f32");
  const model::Model& m = *tm.model;
  std::mt19937 rng(7);
  std::vector<Job> jobs = testing::spec_jobs::repetitive_jobs(rng, 12, 24);
  for (Job& j : jobs) j.n_logprobs = 1;
  auto plain = Engine::create(m, nullptr, options(m, SpecMethod::kNone));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  const auto expected = run_jobs(**plain, jobs);
  // Predictions: the expected output with every fifth token wrong, so drafts are kept up to a
  // point and rejected there (prompt lookup drafts where no prediction does).
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].prediction = expected[i].tokens;
    for (size_t t = 4; t < jobs[i].prediction.size(); t += 5) jobs[i].prediction[t] = (jobs[i].prediction[t] + 1) % 24;
  }
  auto spec = Engine::create(m, nullptr, options(m, SpecMethod::kNgram));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ((*spec)->budget().n_spare_states, 4);
  EXPECT_NE(format_budget((*spec)->budget()).find("4 for draft tokens"), std::string::npos);
  expect_same(run_jobs(**spec, jobs), expected);
  const EngineStats s = (*spec)->stats();
  EXPECT_GT(s.n_accepted_tokens, 0);
  EXPECT_LT(s.n_accepted_tokens, s.n_draft_tokens) << "some drafts were meant to be rejected";
  EXPECT_GT(s.n_preemptions, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_GT(s.n_state_snapshots, 0);
}

// A draft model (a dense one of the same vocabulary) drafting for the hybrid model: its drafts are
// mostly wrong, every rejection rolls the state back, and the outputs are plain decoding's,
// greedy and sampled by the match rule.
TEST(HybridSpec, ADenseDraftModelChangesNoOutput) {
  const testing::TinyModel& tm = testing::tiny_model("tiny-qwen35", "f32");
  const testing::TinyModel& draft = testing::tiny_model("tiny-qwen3", "f32");
  ASSERT_EQ(draft.model->config().n_vocab, tm.model->config().n_vocab);
  const model::Model& m = *tm.model;
  std::mt19937 rng(9);
  std::vector<Job> jobs = testing::spec_jobs::repetitive_jobs(rng, 8, 24);
  for (Job& j : jobs) j.n_logprobs = 1;
  auto plain = Engine::create(m, nullptr, options(m, SpecMethod::kNone));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  const auto expected = run_jobs(**plain, jobs);
  EngineOptions o = options(m, SpecMethod::kDraft);
  o.draft_model = draft.model.get();
  o.spec_rejection = false;
  auto spec = Engine::create(m, nullptr, o);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  expect_same(run_jobs(**spec, jobs), expected);
  const EngineStats s = (*spec)->stats();
  EXPECT_GT(s.n_draft_steps, 0);
  EXPECT_GT(s.n_draft_tokens, s.n_accepted_tokens);
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.draft_blocks_used, 0);
}

}  // namespace
}  // namespace ridge::engine
