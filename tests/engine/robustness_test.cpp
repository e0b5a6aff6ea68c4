// The engine on a tiny real model under load: over a thousand requests with random arrivals,
// lengths, sampling, priorities and aborts against a KV pool far too small for all of them.
// Afterwards every request has exactly one final event (stop, length or abort), every block is
// free, and greedy requests produced exactly what they produce alone (no KV corruption through
// preemption, recompute, chunking, the prefix cache or rolled-back speculative drafts).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "engine/engine.h"
#include "tiny_model.h"

namespace ridge::engine {
namespace {

struct Record {
  std::vector<int32_t> tokens;
  std::string text;
  int n_final = 0;
  int n_after_final = 0;
  FinishReason finish = FinishReason::kNone;
};

EngineOptions tight_options(const model::Model& m) {
  EngineOptions o;
  o.max_model_len = 128;
  o.max_seqs = 16;
  o.max_batched_tokens = 64;
  o.block_size = 16;
  // 40 blocks = 640 tokens for 16 sequences of up to 128: preemption is certain.
  o.kv_bytes = kv::kv_block_bytes(m.kv_config(1, kv::KvType::kF16, 16)) * 40;
  o.n_threads = 1;
  return o;
}

OutputCallback recorder(std::map<RequestId, Record>& records) {
  return [&records](const RequestOutput& ev) {
    Record& r = records[ev.id];
    if (r.n_final > 0) r.n_after_final += 1;
    r.tokens.insert(r.tokens.end(), ev.tokens.begin(), ev.tokens.end());
    r.text += ev.text;
    if (ev.finished()) {
      r.n_final += 1;
      r.finish = ev.finish;
    }
  };
}

std::vector<int32_t> prompt_of(std::mt19937& rng, int32_t n_vocab) {
  static const std::vector<int32_t> kSystem = [] {
    std::vector<int32_t> s(48);
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<int32_t>((7 + i * 13) % 500);
    return s;
  }();
  std::vector<int32_t> p;
  if (rng() % 3 == 0) p = kSystem;  // a shared prefix for the cache
  const auto n = 1 + rng() % 60;
  for (uint32_t i = 0; i < n; ++i) p.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab)));
  return p;
}

// spec: the engine also speculates (prompt lookup, or the model's Q8_0 copy as a draft model),
// which changes no output. preset: the model (a hybrid one runs with a few cached recurrent
// states, evicted all the time).
void stress(SpecMethod spec, const std::string& preset = "tiny-qwen3") {
  const testing::TinyModel& tm = testing::tiny_model(preset, "f32");
  const bool hybrid = tm.model->config().n_recurrent_layers() > 0;
  const model::Model& m = *tm.model;
  const auto n_vocab = static_cast<int32_t>(m.config().n_vocab);
  std::mt19937 rng(2024);

  // Greedy references, each run alone.
  constexpr int kGreedy = 40;
  std::vector<std::vector<int32_t>> greedy_prompts;
  std::vector<int32_t> greedy_len;
  std::vector<std::vector<int32_t>> alone;
  {
    auto e = Engine::create(m, tm.tokenizer.get(), tight_options(m));
    ASSERT_TRUE(e.ok()) << e.status().message();
    for (int i = 0; i < kGreedy; ++i) {
      greedy_prompts.push_back(prompt_of(rng, n_vocab));
      greedy_len.push_back(1 + static_cast<int32_t>(rng() % 40));
      std::map<RequestId, Record> rec;
      Request r;
      r.prompt_tokens = greedy_prompts.back();
      r.params.temperature = 0;
      r.params.max_tokens = greedy_len.back();
      r.ignore_eos = true;
      r.on_output = recorder(rec);
      const RequestId id = *(*e)->add_request(std::move(r));
      while ((*e)->has_work()) (*e)->step();
      alone.push_back(rec[id].tokens);
    }
  }

  EngineOptions opts = tight_options(m);
  if (hybrid) opts.state_cache = 4;
  if (spec != SpecMethod::kNone) {
    // Speculating sequences finish in fewer steps and hold the pool for less time: a tighter
    // pool keeps preemption certain (the draft lengths follow measured step times, so the run
    // is not the same twice; the outputs are).
    opts.spec = spec;
    opts.kv_bytes = opts.kv_bytes / 40 * 20;
    // Drafting every step: the cost rule would turn off a draft model this large, and prompt
    // lookup on the hybrid model (whose random weights rarely repeat themselves).
    if (hybrid) opts.spec_cost_rule = false;
    if (spec == SpecMethod::kDraft) {
      opts.draft_model = testing::tiny_model("tiny-qwen3", "q8_0").model.get();
      opts.spec_cost_rule = false;
    }
  }
  auto eng = Engine::create(m, tm.tokenizer.get(), opts);
  ASSERT_TRUE(eng.ok());
  Engine& e = **eng;
  std::map<RequestId, Record> records;
  std::map<RequestId, int> greedy_ids;  // id -> index into greedy_prompts
  std::vector<RequestId> live;
  constexpr int kRequests = 1200;
  int submitted = 0, rejected = 0;
  int64_t steps = 0;
  while ((submitted < kRequests || e.has_work()) && steps < 200000) {
    const int burst = submitted < kRequests ? static_cast<int>(rng() % 4) : 0;  // random arrivals
    for (int b = 0; b < burst && submitted < kRequests; ++b, ++submitted) {
      Request r;
      const bool greedy = submitted % 30 == 0 && submitted / 30 < kGreedy;
      if (greedy) {
        const int g = submitted / 30;
        r.prompt_tokens = greedy_prompts[static_cast<size_t>(g)];
        r.params.temperature = 0;
        r.params.max_tokens = greedy_len[static_cast<size_t>(g)];
        r.ignore_eos = true;
      } else {
        r.prompt_tokens = prompt_of(rng, n_vocab);
        if (rng() % 50 == 0) r.prompt_tokens.resize(200);  // beyond max-model-len: rejected
        r.params.temperature = rng() % 2 ? 0.8f : 0.0f;
        r.params.seed = rng();
        r.params.max_tokens = 1 + static_cast<int32_t>(rng() % 40);
        if (rng() % 10 == 0) r.params.stop = {"e"};
        if (rng() % 10 == 0) r.n_logprobs = 2;
        r.priority = static_cast<int32_t>(rng() % 3);
      }
      r.on_output = recorder(records);
      auto id = e.add_request(std::move(r));
      if (!id.ok()) {
        ++rejected;
        continue;
      }
      live.push_back(*id);
      if (greedy) greedy_ids[*id] = submitted / 30;
    }
    if (!live.empty() && rng() % 8 == 0) {  // abort a random request (maybe finished already)
      const size_t k = rng() % live.size();
      if (greedy_ids.count(live[k]) == 0) e.abort(live[k]);
    }
    e.step();
    ++steps;
  }
  EXPECT_FALSE(e.has_work()) << "not finished after " << steps << " steps";
  EXPECT_GT(rejected, 0);
  EXPECT_EQ(records.size(), live.size());
  std::map<FinishReason, int> reasons;
  for (RequestId id : live) {
    const Record& r = records[id];
    EXPECT_EQ(r.n_final, 1) << id;
    EXPECT_EQ(r.n_after_final, 0) << id;
    reasons[r.finish] += 1;
  }
  EXPECT_EQ(reasons[FinishReason::kError], 0);
  EXPECT_GT(reasons[FinishReason::kAbort], 0);
  EXPECT_GT(reasons[FinishReason::kLength], 0);
  for (auto [id, g] : greedy_ids) {
    EXPECT_EQ(records[id].tokens, alone[static_cast<size_t>(g)]) << "greedy request " << g;
  }
  const EngineStats st = e.stats();
  EXPECT_EQ(st.kv_blocks_used, 0);
  EXPECT_EQ(st.kv_blocks_free, st.kv_blocks_total);
  EXPECT_EQ(st.n_running + st.n_waiting, 0);
  EXPECT_GT(st.n_preemptions, 0);
  EXPECT_GT(st.prefix_cache_hit_rate, 0);
  EXPECT_EQ(st.draft_blocks_used, 0);
  EXPECT_EQ(st.n_state_hits > 0, hybrid);
  if (spec != SpecMethod::kNone) {
    EXPECT_GT(st.n_accepted_tokens, 0);
    EXPECT_LT(st.n_accepted_tokens, st.n_draft_tokens);  // rejected drafts were rolled back
  } else {
    EXPECT_EQ(st.n_draft_tokens, 0);
  }
  std::printf("robustness: %d requests (%d rejected), %lld steps, %lld preemptions, hit rate %.2f, "
              "drafts %lld (%lld accepted)\n",
              submitted, rejected, static_cast<long long>(steps), static_cast<long long>(st.n_preemptions),
              st.prefix_cache_hit_rate, static_cast<long long>(st.n_draft_tokens),
              static_cast<long long>(st.n_accepted_tokens));
}

TEST(Robustness, ThousandsOfRequestsOnATightPool) { stress(SpecMethod::kNone); }

TEST(Robustness, ThousandsOfRequestsOnATightPoolWithSpeculation) { stress(SpecMethod::kNgram); }

TEST(Robustness, ThousandsOfRequestsOnATightPoolWithADraftModel) { stress(SpecMethod::kDraft); }

TEST(Robustness, ThousandsOfRequestsOnATightPoolWithAHybridModel) { stress(SpecMethod::kNone, "tiny-qwen35"); }

TEST(Robustness, ThousandsOfRequestsOnATightPoolWithAHybridModelSpeculating) {
  stress(SpecMethod::kNgram, "tiny-qwen35");
}

}  // namespace
}  // namespace ridge::engine
