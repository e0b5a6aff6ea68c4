// A hybrid model (Qwen3.5: Gated DeltaNet layers with per-sequence recurrent state) through the
// continuous-batching engine: each request's greedy tokens equal what the model gives it alone,
// with sequences batched, preempted and recomputed, with and without the prefix cache's states;
// the state slots are reported in the budget.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "engine/engine.h"
#include "engine/session.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

std::vector<int32_t> greedy_alone(const model::Model& m, const std::vector<int32_t>& prompt, int n) {
  engine::SessionOptions so;
  so.n_ctx = 64;
  auto s = engine::Session::create(m, so);
  EXPECT_TRUE(s.ok());
  std::vector<int32_t> out;
  auto logits = s->eval(prompt);
  for (int i = 0; i < n && logits.ok(); ++i) {
    const int32_t t = static_cast<int32_t>(std::max_element(logits->begin(), logits->end()) - logits->begin());
    out.push_back(t);
    if (i + 1 < n) logits = s->eval(std::span(&t, 1));
  }
  EXPECT_TRUE(logits.ok());
  return out;
}

class HybridEngine : public ::testing::TestWithParam<int32_t> {};  // EngineOptions::state_cache

TEST_P(HybridEngine, GreedyTokensMatchAloneWithBatchingAndPreemption) {
  const testing::TinyModel& tm = testing::tiny_model("tiny-qwen35", "f32");
  const model::Model& m = *tm.model;
  EngineOptions o;
  o.state_cache = GetParam();
  o.max_model_len = 64;
  o.max_batched_tokens = 24;  // prompts arrive in chunks
  o.block_size = 16;
  o.max_seqs = 3;
  o.n_threads = 2;
  // Five blocks for three running sequences that grow to 2-4 blocks each: some are preempted.
  o.kv_bytes = 5 * kv::kv_block_bytes(m.kv_config(1, kv::KvType::kF16, 16));
  auto e = Engine::create(m, tm.tokenizer.get(), o);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ((*e)->budget().n_state_slots, 3);
  EXPECT_EQ((*e)->budget().n_cached_states, GetParam() < 0 ? 3 : GetParam());
  EXPECT_GT((*e)->budget().state_bytes, 0u);
  EXPECT_EQ(format_budget((*e)->budget()).find("prefix caching off") != std::string::npos, GetParam() == 0);

  constexpr int kNew = 12;
  std::vector<std::vector<int32_t>> prompts;
  for (int r = 0; r < 5; ++r) {
    std::vector<int32_t> p;
    for (int i = 0; i < 9 + 7 * r; ++i) p.push_back((13 * r + 31 * i + 5) % 500);
    prompts.push_back(p);
  }
  prompts.push_back(prompts[1]);  // the same prompt twice: no prefix cache hit may change it
  std::map<RequestId, std::vector<int32_t>> got;
  std::vector<RequestId> ids;
  for (const auto& p : prompts) {
    Request r;
    r.prompt_tokens = p;
    r.params.temperature = 0;
    r.params.max_tokens = kNew;
    r.ignore_eos = true;
    r.on_output = [&got](const RequestOutput& ev) {
      EXPECT_NE(ev.finish, FinishReason::kError) << ev.error;
      auto& v = got[ev.id];
      v.insert(v.end(), ev.tokens.begin(), ev.tokens.end());
    };
    auto id = (*e)->add_request(std::move(r));
    ASSERT_TRUE(id.ok());
    ids.push_back(*id);
  }
  for (int i = 0; i < 1000 && (*e)->step(); ++i) {
  }
  EXPECT_GT((*e)->stats().n_preemptions, 0) << "the pool was meant to force preemption";
  for (size_t r = 0; r < prompts.size(); ++r) {
    EXPECT_EQ(got[ids[r]], greedy_alone(m, prompts[r], kNew)) << "request " << r;
  }
}

// No state cache; the default (one per sequence); one state for three sequences.
INSTANTIATE_TEST_SUITE_P(StateCache, HybridEngine, ::testing::Values(0, -1, 1));

}  // namespace
}  // namespace ridge::engine
