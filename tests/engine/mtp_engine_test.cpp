// Speculative decoding by the model's MTP head (SpecMethod::kMtp) in the engine. The head's K/V
// lives in a layer of the model's cache, written by every step and overwritten by the drafts'
// rows; a draft starts from the newest token paired with the hidden state the sequence kept.
// - Bookkeeping: every first draft of a step sees exactly what a teacher-forced pass over the
//   finished text computes (model/mtp.cpp): its token the text's, its hidden state bit for bit
//   the trunk's at the position before, and its logits' argmax the head's over the whole text
//   (batch invariance makes the two bit-identical whenever every earlier position of the head's
//   KV holds its true pair).
// - Output: plain decoding's, greedy and sampled, batched, with preemption and the prefix cache.
#include <gtest/gtest.h>

#include <random>

#include "mtp_teacher_forced.h"
#include "spec_jobs.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace mtp_engine_test {

using testing::spec_jobs::expect_same;
using testing::spec_jobs::Job;
using testing::spec_jobs::run_jobs;

// A ModelRunner that records the first row of every draft chain (the first run_mtp after a run).
class RecordingRunner final : public Runner {
 public:
  struct FirstDraft {
    int32_t pos = 0, token = 0, argmax = 0;
    std::vector<float> h;
  };
  explicit RecordingRunner(std::unique_ptr<ModelRunner> inner) : inner_(std::move(inner)) {}

  Result<std::span<const float>> run(const model::Batch& b) override {
    after_run_ = true;
    return inner_->run(b);
  }
  Result<std::span<const float>> run_mtp(const model::Batch& b, std::span<const float> h) override {
    Result<std::span<const float>> out = inner_->run_mtp(b, h);
    if (out.ok() && after_run_) {
      const auto v = static_cast<size_t>(n_vocab());
      const auto d = static_cast<size_t>(n_embd());
      for (size_t r = 0; r < static_cast<size_t>(b.n_tokens()); ++r) {
        const std::span<const float> row = out->subspan(r * v, v);
        first.push_back({b.positions[r], b.tokens[r],
                         static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()),
                         std::vector<float>(h.begin() + static_cast<long>(r * d), h.begin() + static_cast<long>((r + 1) * d))});
      }
    }
    after_run_ = false;
    return out;
  }
  int32_t n_vocab() const override { return inner_->n_vocab(); }
  int32_t n_blocks() const override { return inner_->n_blocks(); }
  int32_t block_size() const override { return inner_->block_size(); }
  int32_t n_embd() const override { return inner_->n_embd(); }
  int32_t n_state_slots() const override { return inner_->n_state_slots(); }
  void copy_state(int32_t from, int32_t to) override { inner_->copy_state(from, to); }
  bool has_mtp() const override { return inner_->has_mtp(); }
  std::span<const float> hidden_rows() const override { return inner_->hidden_rows(); }

  std::vector<FirstDraft> first;

 private:
  std::unique_ptr<ModelRunner> inner_;
  bool after_run_ = false;
};

EngineOptions options(SpecMethod spec) {
  EngineOptions o;
  o.max_model_len = 96;
  o.max_seqs = 4;
  o.max_batched_tokens = 32;
  o.block_size = 16;
  o.n_threads = 2;
  o.spec = spec;
  o.spec_max = 3;
  o.spec_cost_rule = false;  // draft whatever is proposed: the counts do not depend on timing
  return o;
}

class MtpEngine : public ::testing::TestWithParam<const char*> {};

TEST_P(MtpEngine, EveryFirstDraftSeesTheTeacherForcedHead) {
  const model::Model& m = *testing::tiny_model(GetParam(), "f32").model;
  ASSERT_TRUE(m.has_mtp());
  ModelRunnerOptions ro;
  ro.n_blocks = 8;
  ro.block_size = 16;
  ro.max_tokens = 32;
  ro.max_outputs = 8;
  ro.max_context = 96;
  ro.n_threads = 2;
  ro.n_state_slots = 8;
  ro.mtp = true;
  auto inner = ModelRunner::create(m, ro);
  ASSERT_TRUE(inner.ok()) << inner.status().message();
  auto recording = std::make_unique<RecordingRunner>(std::move(inner).value());
  RecordingRunner* rec = recording.get();
  EngineOptions o = options(SpecMethod::kMtp);
  o.max_seqs = 1;
  o.prefix_caching = false;
  auto e = Engine::create(std::move(recording), nullptr, o);
  ASSERT_TRUE(e.ok()) << e.status().message();
  Job j;
  for (int32_t i = 0; i < 40; ++i) j.prompt.push_back((11 + 37 * i) % 500);  // two prompt chunks
  j.max_tokens = 40;
  const auto out = run_jobs(**e, {j});
  ASSERT_EQ(out[0].tokens.size(), 40u);
  std::vector<int32_t> text = j.prompt;
  text.insert(text.end(), out[0].tokens.begin(), out[0].tokens.end());
  const testing::TeacherForced t = testing::teacher_forced(m, text);
  const auto d = static_cast<size_t>(m.config().n_embd);
  ASSERT_GE(rec->first.size(), 10u);
  for (const RecordingRunner::FirstDraft& f : rec->first) {
    const auto p = static_cast<size_t>(f.pos);
    ASSERT_LT(p, text.size());
    EXPECT_EQ(f.token, text[p]) << "position " << p;
    const std::vector<float> want(t.hidden.begin() + static_cast<long>((p - 1) * d), t.hidden.begin() + static_cast<long>(p * d));
    EXPECT_EQ(f.h, want) << "the hidden state paired with position " << p;
    EXPECT_EQ(f.argmax, t.head_top[p]) << "the head's first draft at position " << p;
  }
  const EngineStats s = (*e)->stats();
  EXPECT_GT(s.n_draft_steps, 0);
  EXPECT_GT(s.n_draft_tokens, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
  RecordProperty("accepted", std::to_string(s.n_accepted_tokens) + " of " + std::to_string(s.n_draft_tokens));
}

TEST_P(MtpEngine, DraftsChangeNoOutput) {
  const model::Model& m = *testing::tiny_model(GetParam(), "f32").model;
  std::mt19937 rng(5);
  std::vector<Job> jobs = testing::spec_jobs::repetitive_jobs(rng, 10, 24);
  for (Job& j : jobs) j.n_logprobs = 1;
  EngineOptions po = options(SpecMethod::kNone);
  // 10 blocks for four sequences of up to 5 blocks: some are preempted.
  po.kv_bytes = 10 * kv::kv_block_bytes(m.kv_config(1, kv::KvType::kF16, 16));
  auto plain = Engine::create(m, nullptr, po);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  const auto expected = run_jobs(**plain, jobs);
  EngineOptions so = options(SpecMethod::kMtp);
  so.kv_bytes = 10 * kv::kv_block_bytes(m.kv_config(1, kv::KvType::kF16, 16, 1, 0, /*mtp=*/true));
  so.spec_rejection = false;  // sampled requests keep their seed's tokens (the match rule)
  auto spec = Engine::create(m, nullptr, so);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  expect_same(run_jobs(**spec, jobs), expected);
  const EngineStats s = (*spec)->stats();
  EXPECT_GT(s.n_draft_steps, 0);
  EXPECT_GT(s.n_draft_tokens, 0);
  EXPECT_GT(s.n_preemptions, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
}

TEST(MtpEngineOptions, AModelWithoutAHeadIsRefused) {
  const model::Model& m = *testing::tiny_model("tiny-qwen35", "f32").model;
  auto e = Engine::create(m, nullptr, options(SpecMethod::kMtp));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("MTP head"), std::string::npos) << e.status().message();
}

INSTANTIATE_TEST_SUITE_P(Presets, MtpEngine, ::testing::Values("tiny-qwen35-mtp", "tiny-qwen35moe-mtp"),
                         testing::PresetName());

}  // namespace mtp_engine_test
}  // namespace ridge::engine
