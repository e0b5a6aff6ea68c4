// Prefix caching for a hybrid model (Qwen3.5's recurrent state, engine/recurrent_slots.h): a
// request that starts from a cached prefix and its state gets, bit for bit, the log-probabilities
// of the same request computed from scratch; the hits land where the states were kept (a prompt
// sent again, the next turn of a conversation, prompts that share a prefix).
#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

struct Result1 {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;  // the sampled token's, then its top 5, per token
  int32_t n_cached = 0;
};

class Runs {
 public:
  explicit Runs(int32_t state_cache, int32_t snapshot_interval = 0) {
    const testing::TinyModel& tm = testing::tiny_model("tiny-qwen35", "f32");
    EngineOptions o;
    o.max_model_len = 160;
    o.max_batched_tokens = 32;  // prompts in chunks
    o.block_size = 16;
    o.max_seqs = 2;
    o.n_threads = 2;
    o.state_cache = state_cache;
    o.state_snapshot_interval = snapshot_interval;
    o.kv_bytes = 40 * kv::kv_block_bytes(tm.model->kv_config(1, kv::KvType::kF16, 16));
    auto e = Engine::create(*tm.model, tm.tokenizer.get(), o);
    EXPECT_TRUE(e.ok()) << e.status().message();
    engine_ = std::move(e).value();
  }
  // Runs one request to its end.
  Result1 run(const std::vector<int32_t>& prompt, int n_new) {
    Result1 out;
    Request r;
    r.prompt_tokens = prompt;
    r.params.temperature = 0;
    r.params.max_tokens = n_new;
    r.ignore_eos = true;
    r.n_logprobs = 5;
    r.on_output = [&out](const RequestOutput& ev) {
      EXPECT_NE(ev.finish, FinishReason::kError) << ev.error;
      out.tokens.insert(out.tokens.end(), ev.tokens.begin(), ev.tokens.end());
      for (const auto& lp : ev.logprobs) {
        out.logprobs.push_back(lp.logprob);
        for (const auto& t : lp.top) out.logprobs.push_back(t.logprob);
      }
      out.n_cached = ev.stats.n_cached_prompt_tokens;
    };
    EXPECT_TRUE(engine_->add_request(std::move(r)).ok());
    for (int i = 0; i < 1000 && engine_->step(); ++i) {
    }
    return out;
  }
  Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<Engine> engine_;
};

std::vector<int32_t> tokens_of(int n, int salt) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((salt + 37 * i) % 500);
  return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(HybridPrefixCache, HitsGiveTheLogprobsOfAMiss) {
  Runs cached(4), fresh(0);  // room for every state this test keeps
  const std::vector<int32_t> p = tokens_of(70, 3);
  const std::vector<int32_t> shared(p.begin(), p.begin() + 40);
  constexpr int kNew = 20;
  // expect_cached: the prompt tokens the cached engine takes from its prefix cache.
  auto both = [&](const std::vector<int32_t>& prompt, int32_t expect_cached, const char* what) {
    const Result1 a = cached.run(prompt, kNew), b = fresh.run(prompt, kNew);
    EXPECT_EQ(a.tokens, b.tokens) << what;
    EXPECT_EQ(a.logprobs, b.logprobs) << what;
    EXPECT_EQ(a.n_cached, expect_cached) << what;
    EXPECT_EQ(b.n_cached, 0) << what;
    return a;
  };
  const Result1 first = both(p, 0, "first");
  // The same prompt: its last block boundary before the final token (64) was kept.
  both(p, 64, "again");
  // The next turn: the prompt, the reply, more text. Generating, the sequence kept its latest
  // block boundary: 70 prompt + 19 computed reply tokens -> 80.
  both(concat(concat(p, first.tokens), tokens_of(9, 11)), 80, "next turn");
  // A prompt sharing 40 tokens: its cached blocks (32 tokens) have no state there, so it computes
  // all and keeps the state where the prompts part; the next one starts there.
  both(concat(shared, tokens_of(30, 5)), 0, "shared, first");
  both(concat(shared, tokens_of(25, 7)), 32, "shared, second");
  const EngineStats s = cached.engine().stats();
  EXPECT_EQ(s.n_state_hits, 3);
  EXPECT_GT(s.n_state_snapshots, 3);
  EXPECT_EQ(fresh.engine().stats().n_state_snapshots, 0);
}

// With a snapshot every 32 prompt tokens, the first prompt that shares 40 tokens with an earlier
// one starts at 32 (without: at 0, HitsGiveTheLogprobsOfAMiss), with a miss's log-probabilities.
TEST(HybridPrefixCache, IntervalSnapshotsServeTheFirstSharedPrompt) {
  Runs cached(4, 32), fresh(0);
  const std::vector<int32_t> p = tokens_of(70, 3);
  const std::vector<int32_t> other = concat(std::vector<int32_t>(p.begin(), p.begin() + 40), tokens_of(30, 5));
  for (const auto& [prompt, expect_cached] : {std::pair{p, 0}, std::pair{other, 32}}) {
    const Result1 a = cached.run(prompt, 12), b = fresh.run(prompt, 12);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.logprobs, b.logprobs);
    EXPECT_EQ(a.n_cached, expect_cached);
  }
  EXPECT_EQ(cached.engine().stats().n_state_hits, 1);
}

TEST(HybridPrefixCache, SnapshotIntervalBelowABlockIsRefused) {
  const testing::TinyModel& tm = testing::tiny_model("tiny-qwen35", "f32");
  EngineOptions o;
  o.max_model_len = 64;
  o.block_size = 16;
  o.state_snapshot_interval = 8;
  o.kv_bytes = 40 * kv::kv_block_bytes(tm.model->kv_config(1, kv::KvType::kF16, 16));
  auto e = Engine::create(*tm.model, tm.tokenizer.get(), o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "engine: state snapshot interval 8 is below the block size 16");
}

// Two sequences at once, sharing a prefix, sent three times, and one cached state: snapshots
// compete for the slot and evict each other; hits still give a miss's log-probabilities.
TEST(HybridPrefixCache, OneCachedStateForTwoSequences) {
  Runs cached(1), fresh(0);
  const std::vector<int32_t> p = tokens_of(50, 9);
  for (int round = 0; round < 3; ++round) {
    std::vector<Result1> a(2), b(2);
    for (auto* runs : {&cached, &fresh}) {
      auto& out = runs == &cached ? a : b;
      for (int i = 0; i < 2; ++i) {
        Request r;
        r.prompt_tokens = concat(p, tokens_of(5 + 17 * i, i));
        r.params.temperature = 0;
        r.params.max_tokens = 4;
        r.ignore_eos = true;
        r.n_logprobs = 2;
        r.on_output = [&out, i](const RequestOutput& ev) {
          out[i].tokens.insert(out[i].tokens.end(), ev.tokens.begin(), ev.tokens.end());
          for (const auto& lp : ev.logprobs) out[i].logprobs.push_back(lp.logprob);
        };
        ASSERT_TRUE(runs->engine().add_request(std::move(r)).ok());
      }
      for (int k = 0; k < 1000 && runs->engine().step(); ++k) {
      }
    }
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(a[i].tokens, b[i].tokens) << "round " << round << " seq " << i;
      EXPECT_EQ(a[i].logprobs, b[i].logprobs) << "round " << round << " seq " << i;
    }
  }
  EXPECT_GT(cached.engine().stats().n_state_hits, 0);
}

}  // namespace
}  // namespace ridge::engine
