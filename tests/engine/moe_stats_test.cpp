// The engine's bytes statistic on a mixture-of-experts model counts the experts the router really
// chose in each step (Runner::experts_run), not the uniform-routing expectation.
#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.h"
#include "model/cost.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

TEST(MoeStats, StepBytesCountTheExpertsTheRouterChose) {
  const testing::TinyModel& tm = testing::tiny_model("tiny-qwen3moe", "f32");
  const model::Model& m = *tm.model;
  const model::ModelConfig& cfg = m.config();
  ASSERT_EQ(cfg.n_expert, 8);
  ASSERT_EQ(cfg.n_expert_used, 2);
  EngineOptions o;
  o.max_model_len = 64;
  o.max_batched_tokens = 64;
  o.block_size = 16;
  o.kv_type = kv::KvType::kF16;
  o.n_threads = 1;
  auto e = Engine::create(m, tm.tokenizer.get(), o);
  ASSERT_TRUE(e.ok()) << e.status().message();

  // Twelve copies of one token: every position's hidden state is the same in every layer (each
  // attends to identical values), so every token picks the same 2 experts: a union of 2 per
  // layer, where uniform routing expects 8 (1 - (6/8)^12) = 7.7.
  constexpr int kPrompt = 12;
  Request r;
  r.prompt_tokens.assign(kPrompt, 77);
  r.params.temperature = 0;
  r.params.max_tokens = 3;
  r.ignore_eos = true;
  r.on_output = [](const RequestOutput&) {};
  ASSERT_TRUE((*e)->add_request(std::move(r)).ok());
  ASSERT_TRUE((*e)->step());  // the whole prompt in one step

  auto types = model::weight_types_from_gguf(m.file());
  ASSERT_TRUE(types.ok());
  auto mc = model::model_cost(cfg, *types, kv::KvType::kF16);
  ASSERT_TRUE(mc.ok()) << mc.status().message();
  const std::vector<model::SeqWork> prefill = {{0, kPrompt}};
  const std::vector<int64_t> chosen(static_cast<size_t>(cfg.n_layer), cfg.n_expert_used);
  const double want = model::cost_of_step(*mc, prefill, chosen).bytes();
  const double uniform = model::cost_of_step(*mc, prefill).bytes();
  EXPECT_LT(want, 0.9 * uniform);  // the test tells the two apart
  EXPECT_DOUBLE_EQ((*e)->stats().bytes_moved, want);

  // A decode step (one token) reads its 2 experts per layer as well.
  ASSERT_TRUE((*e)->step());
  const std::vector<model::SeqWork> decode = {{kPrompt, 1}};
  EXPECT_DOUBLE_EQ((*e)->stats().bytes_moved, want + model::cost_of_step(*mc, decode, chosen).bytes());
}

}  // namespace
}  // namespace ridge::engine
