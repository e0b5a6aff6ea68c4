// The engine with a window space (EngineOptions::swa_full false, the default for models with
// sliding-window and global layers): the windowed layers' blocks go back as the windows move,
// and every request gets, bit for bit, what it gets when every layer keeps every position
// (--swa-full): in a busy batch, under preemption, with speculation, and from the prefix cache.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/engine.h"
#include "spec_jobs.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

using testing::spec_jobs::Job;
using testing::spec_jobs::Output;
using testing::spec_jobs::expect_same;
using testing::spec_jobs::run_jobs;

EngineOptions options(bool swa_full) {
  EngineOptions o;
  o.max_model_len = 192;
  o.max_batched_tokens = 32;
  o.block_size = 4;
  o.max_seqs = 4;
  o.n_threads = 2;
  o.swa_full = swa_full;
  return o;
}

std::unique_ptr<Engine> make(const char* preset, const EngineOptions& o) {
  const testing::TinyModel& tm = testing::tiny_model(preset, "f32");
  auto e = Engine::create(*tm.model, tm.tokenizer.get(), o);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return std::move(e).value();
}

std::vector<Job> jobs(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Job> out;
  for (int i = 0; i < n; ++i) {
    Job j;
    j.prompt.resize(5 + rng() % 90);
    for (int32_t& t : j.prompt) t = static_cast<int32_t>(rng() % 500);
    j.max_tokens = 1 + static_cast<int32_t>(rng() % 40);
    j.temperature = i % 2 == 0 ? 0.0f : 0.8f;
    j.seed = rng();
    j.n_logprobs = 3;
    out.push_back(std::move(j));
  }
  return out;
}

class WindowEngine : public ::testing::TestWithParam<const char*> {};

TEST_P(WindowEngine, SameOutputsAsKeepingEveryPosition) {
  auto js = jobs(10, 7);
  js[0].prompt.resize(120, 42);  // 30 blocks of 4
  auto windowed = make(GetParam(), options(false));
  auto full = make(GetParam(), options(true));
  ASSERT_GT(windowed->budget().n_window_blocks, 0);
  EXPECT_EQ(full->budget().n_window_blocks, 0);
  EXPECT_LT(windowed->budget().kv_bytes, full->budget().kv_bytes);
  expect_same(run_jobs(*windowed, js), run_jobs(*full, js));
  // Windows of 8 in blocks of 4: the first prompt fits the window pool only because blocks go
  // back as the window moves.
  EXPECT_LT(windowed->budget().n_window_blocks, 120 / 4);
  EXPECT_EQ(windowed->stats().n_preemptions, 0);
  EXPECT_EQ(windowed->stats().kv_window_blocks_used, 0);  // all given back
}

TEST_P(WindowEngine, SameOutputsUnderPreemption) {
  const auto js = jobs(8, 11);
  EngineOptions o = options(false);
  o.max_model_len = 140;
  const testing::TinyModel& tm = testing::tiny_model(GetParam(), "f32");
  // Room for the global layers of about 1.5 sequences of 140 tokens and every window.
  const kv::KvCacheConfig one = tm.model->kv_config(1, o.kv_type, o.block_size, 1, 1);
  o.kv_bytes = 52 * kv::kv_block_bytes(one, kv::KvSpace::kMain) + 30 * kv::kv_block_bytes(one, kv::KvSpace::kWindow);
  auto windowed = make(GetParam(), o);
  auto full = make(GetParam(), options(true));
  expect_same(run_jobs(*windowed, js), run_jobs(*full, js));
  EXPECT_GT(windowed->stats().n_preemptions, 0);
}

TEST_P(WindowEngine, SameOutputsWithSpeculation) {
  std::mt19937 rng(5);
  const auto js = testing::spec_jobs::repetitive_jobs(rng, 8, 500);
  EngineOptions o = options(false);
  o.spec = SpecMethod::kNgram;
  auto windowed = make(GetParam(), o);
  auto full = make(GetParam(), options(true));
  expect_same(run_jobs(*windowed, js), run_jobs(*full, js));
  EXPECT_GT(windowed->stats().n_draft_tokens, 0);
}

// A prompt sent again, and one that extends it, start from the prefix cache where the window
// blocks of their first computed position are still cached, with a miss's log-probabilities.
TEST_P(WindowEngine, PrefixHitsGiveTheLogprobsOfAMiss) {
  auto windowed = make(GetParam(), options(false));
  auto fresh = make(GetParam(), [] {
    EngineOptions o = options(false);
    o.prefix_caching = false;
    return o;
  }());
  std::vector<Job> js = jobs(1, 3);
  js[0].prompt.resize(61);
  for (size_t i = 0; i < js[0].prompt.size(); ++i) js[0].prompt[i] = static_cast<int32_t>((17 + 31 * i) % 500);
  js[0].temperature = 0;
  Job longer = js[0];
  longer.prompt.insert(longer.prompt.end(), {5, 6, 7, 8, 9, 10, 11});
  for (const Job& j : {js[0], js[0], longer}) {
    const Output a = run_jobs(*windowed, {j})[0], b = run_jobs(*fresh, {j})[0];
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.logprobs, b.logprobs);
  }
  EXPECT_GT(windowed->stats().n_cached_tokens, 2 * 48);  // both later prompts hit most of the first
}

INSTANTIATE_TEST_SUITE_P(Presets, WindowEngine, ::testing::Values("tiny-gemma3", "tiny-gpt-oss", "tiny-gemma4"),
                         testing::PresetName());

}  // namespace
}  // namespace ridge::engine
