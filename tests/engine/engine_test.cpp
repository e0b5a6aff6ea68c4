// Engine tests on the fake runner: validation, streaming contract, finish reasons, aborts,
// threads, and outputs that do not depend on what else is in the batch.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "fake_runner.h"

namespace ridge::engine {
namespace {

using testing::FakeRunner;

struct Collected {
  std::mutex mu;
  std::map<RequestId, std::vector<int32_t>> tokens;
  std::map<RequestId, FinishReason> finish;
  std::map<RequestId, RequestStats> stats;
  std::map<RequestId, int> n_events_after_finish;
  std::map<RequestId, size_t> n_logprobs;

  OutputCallback callback() {
    return [this](const RequestOutput& o) {
      std::lock_guard lock(mu);
      if (finish.count(o.id) != 0) n_events_after_finish[o.id] += 1;
      auto& t = tokens[o.id];
      t.insert(t.end(), o.tokens.begin(), o.tokens.end());
      n_logprobs[o.id] += o.logprobs.size();
      if (o.finished()) {
        finish[o.id] = o.finish;
        stats[o.id] = o.stats;
      }
    };
  }
};

std::unique_ptr<Engine> make_engine(int32_t n_blocks, int32_t block_size, EngineOptions o = {}) {
  auto e = Engine::create(std::make_unique<FakeRunner>(n_blocks, block_size, 1000), nullptr, o);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return std::move(e).value();
}

Request greedy_request(std::vector<int32_t> prompt, int32_t max_tokens, Collected* c) {
  Request r;
  r.prompt_tokens = std::move(prompt);
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  if (c != nullptr) r.on_output = c->callback();
  return r;
}

std::vector<int32_t> random_prompt(std::mt19937& rng, int32_t n, bool shared_prefix) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = shared_prefix && i < 40 ? i : static_cast<int32_t>(rng() % 1000);
  return p;
}

void run_to_end(Engine& e) {
  for (int i = 0; i < 100000 && e.has_work(); ++i) e.step();
  EXPECT_FALSE(e.has_work());
}

TEST(Engine, RejectsInvalidRequestsIndividually) {
  EngineOptions o;
  o.max_model_len = 64;
  auto e = make_engine(64, 4, o);
  EXPECT_TRUE(e->add_request(greedy_request({}, 4, nullptr)).status().is_usage());
  EXPECT_TRUE(e->add_request(greedy_request(std::vector<int32_t>(65, 1), 4, nullptr)).status().is_usage());
  EXPECT_TRUE(e->add_request(greedy_request({1, 1000}, 4, nullptr)).status().is_usage());
  EXPECT_TRUE(e->add_request(greedy_request({1, -1}, 4, nullptr)).status().is_usage());
  EXPECT_TRUE(e->add_request(greedy_request({1, 2}, 0, nullptr)).status().is_usage());
  Request bad = greedy_request({1, 2}, 4, nullptr);
  bad.params.top_p = 1.5f;
  EXPECT_TRUE(e->add_request(bad).status().is_usage());
  Request text;
  text.prompt_text = "hello";  // no tokenizer
  EXPECT_TRUE(e->add_request(text).status().is_usage());
  EXPECT_FALSE(e->has_work());
  auto ok = e->add_request(greedy_request(std::vector<int32_t>(64, 1), 4, nullptr));  // exactly max_model_len
  EXPECT_TRUE(ok.ok());
  run_to_end(*e);
}

TEST(Engine, PoolSmallerThanMaxModelLenIsRejected) {
  EngineOptions o;
  o.max_model_len = 100;
  auto e = Engine::create(std::make_unique<FakeRunner>(10, 4, 100), nullptr, o);
  EXPECT_FALSE(e.ok());
}

TEST(Engine, StreamsEveryTokenAndOneFinalEvent) {
  auto e = make_engine(256, 4);
  Collected c;
  Request r = greedy_request({5, 6, 7}, 9, &c);
  r.n_logprobs = 2;
  const RequestId id = *e->add_request(std::move(r));
  run_to_end(*e);
  EXPECT_EQ(c.tokens[id].size(), 9u);
  EXPECT_EQ(c.n_logprobs[id], 9u);
  EXPECT_EQ(c.finish[id], FinishReason::kLength);
  EXPECT_EQ(c.n_events_after_finish[id], 0);
  const RequestStats& s = c.stats[id];
  EXPECT_EQ(s.n_prompt_tokens, 3);
  EXPECT_EQ(s.n_completion_tokens, 9);
  EXPECT_GT(s.ttft(), 0);
  EXPECT_GE(s.latency(), s.ttft());
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
  EXPECT_EQ(e->stats().n_generated_tokens, 9);
}

TEST(Engine, StopTokenAndMaxModelLen) {
  EngineOptions o;
  o.max_model_len = 12;
  auto e = make_engine(64, 4, o);
  Collected c;
  const RequestId a = *e->add_request(greedy_request({1, 2, 3}, -1, &c));
  run_to_end(*e);
  EXPECT_EQ(c.finish[a], FinishReason::kLength);
  EXPECT_EQ(c.tokens[a].size(), 9u);  // 3 + 9 = max_model_len
  // The third generated token as a stop token: generation ends there, token included.
  Request r = greedy_request({1, 2, 3}, -1, &c);
  r.stop_token_ids = {c.tokens[a][2]};
  const RequestId b = *e->add_request(std::move(r));
  run_to_end(*e);
  EXPECT_EQ(c.finish[b], FinishReason::kStop);
  EXPECT_EQ(c.tokens[b], std::vector<int32_t>(c.tokens[a].begin(), c.tokens[a].begin() + 3));
}

TEST(Engine, AbortFreesBlocks) {
  auto e = make_engine(64, 4);
  Collected c;
  const RequestId a = *e->add_request(greedy_request({1, 2, 3, 4, 5}, 50, &c));
  const RequestId b = *e->add_request(greedy_request({9, 8}, 50, &c));
  for (int i = 0; i < 5; ++i) e->step();
  EXPECT_GT(e->stats().kv_blocks_used, 0);
  e->abort(a);
  e->abort(12345);  // unknown: ignored
  e->step();
  EXPECT_EQ(c.finish[a], FinishReason::kAbort);
  EXPECT_EQ(c.finish.count(b), 0u);
  run_to_end(*e);
  EXPECT_EQ(c.finish[b], FinishReason::kLength);
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
}

// Greedy outputs with many requests, a tight pool (preemption), shared prefixes (prefix cache)
// and a small token budget (chunked prefill) equal each request's output when run alone.
TEST(Engine, OutputsIndependentOfBatchingPreemptionAndCaching) {
  std::mt19937 rng(7);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int32_t> lens;
  for (int i = 0; i < 40; ++i) {
    prompts.push_back(random_prompt(rng, 1 + static_cast<int32_t>(rng() % 90), i % 2 == 0));
    lens.push_back(1 + static_cast<int32_t>(rng() % 30));
  }
  std::vector<std::vector<int32_t>> alone;
  {
    auto e = make_engine(64, 4);
    for (size_t i = 0; i < prompts.size(); ++i) {
      Collected c;
      const RequestId id = *e->add_request(greedy_request(prompts[i], lens[i], &c));
      run_to_end(*e);
      alone.push_back(c.tokens[id]);
    }
  }
  EngineOptions o;
  o.max_batched_tokens = 24;
  o.max_seqs = 16;
  o.max_model_len = 128;
  auto e = make_engine(40, 4, o);  // 160 slots for up to 16 sequences of up to 120 tokens
  Collected c;
  std::vector<RequestId> ids;
  for (size_t i = 0; i < prompts.size(); ++i) ids.push_back(*e->add_request(greedy_request(prompts[i], lens[i], &c)));
  run_to_end(*e);
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(c.tokens[ids[i]], alone[i]) << "request " << i;
    EXPECT_EQ(c.finish[ids[i]], FinishReason::kLength);
  }
  const EngineStats st = e->stats();
  EXPECT_GT(st.n_preemptions, 0);
  EXPECT_GT(st.prefix_cache_hit_rate, 0);
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_EQ(st.n_running + st.n_waiting, 0);
}

TEST(Engine, ThreadedSubmitAbortAndDrain) {
  EngineOptions o;
  o.max_batched_tokens = 32;
  o.max_seqs = 8;
  o.max_model_len = 64;
  auto e = make_engine(48, 4, o);
  Collected c;
  std::thread loop([&] { e->run_loop(); });
  std::vector<std::thread> clients;
  std::atomic<int> accepted{0};
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t));
      for (int i = 0; i < 50; ++i) {
        auto id = e->add_request(greedy_request(random_prompt(rng, 1 + static_cast<int32_t>(rng() % 40), false),
                                                1 + static_cast<int32_t>(rng() % 20), &c));
        ASSERT_TRUE(id.ok());
        accepted += 1;
        if (rng() % 4 == 0) e->abort(*id);
        if (rng() % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  }
  for (auto& t : clients) t.join();
  e->stop(/*drain=*/true);
  loop.join();
  EXPECT_FALSE(e->add_request(greedy_request({1}, 1, nullptr)).ok());
  EXPECT_EQ(static_cast<int>(c.finish.size()), accepted.load());
  for (auto& [id, n] : c.n_events_after_finish) EXPECT_EQ(n, 0) << id;
  EXPECT_EQ(e->stats().kv_blocks_used, 0);
}

TEST(Engine, StopWithoutDrainAbortsEverything) {
  auto e = make_engine(64, 4);
  Collected c;
  for (int i = 0; i < 5; ++i) (void)*e->add_request(greedy_request({1, 2, 3}, 1000 > 60 ? 60 : 1, &c));
  e->step();
  e->stop(/*drain=*/false);
  e->run_loop();  // returns once everything is aborted
  EXPECT_EQ(c.finish.size(), 5u);
  for (auto& [id, r] : c.finish) EXPECT_EQ(r, FinishReason::kAbort);
  EXPECT_FALSE(e->has_work());
}

}  // namespace
}  // namespace ridge::engine
