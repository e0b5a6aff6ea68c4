// What the engine's speculation tests share: jobs run through an engine, their outputs, prompts
// that repeat themselves, and the comparison with plain decoding.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <vector>

#include "engine/engine.h"
#include "fake_runner.h"

namespace ridge::engine::testing::spec_jobs {

struct Output {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  FinishReason finish = FinishReason::kNone;
  RequestStats stats;
};

struct Job {
  std::vector<int32_t> prompt;
  int32_t max_tokens = 0;
  float temperature = 0;
  uint64_t seed = 0;
  int32_t n_logprobs = -1;
  std::vector<int32_t> prediction;
};

// Runs the jobs, all submitted at once, and returns their outputs in job order.
inline std::vector<Output> run_jobs(Engine& e, const std::vector<Job>& jobs) {
  std::map<RequestId, Output> out;
  std::vector<RequestId> ids;
  for (const Job& j : jobs) {
    Request r;
    r.prompt_tokens = j.prompt;
    r.params.temperature = j.temperature;
    r.params.seed = j.seed;
    r.params.max_tokens = j.max_tokens;
    r.n_logprobs = j.n_logprobs;
    r.prediction = j.prediction;
    r.ignore_eos = true;
    r.on_output = [&out](const RequestOutput& ev) {
      Output& o = out[ev.id];
      o.tokens.insert(o.tokens.end(), ev.tokens.begin(), ev.tokens.end());
      for (const auto& lp : ev.logprobs) o.logprobs.push_back(lp.logprob);
      if (ev.finished()) {
        o.finish = ev.finish;
        o.stats = ev.stats;
      }
    };
    auto id = e.add_request(std::move(r));
    EXPECT_TRUE(id.ok()) << id.status().message();
    ids.push_back(*id);
  }
  for (int i = 0; i < 200000 && e.has_work(); ++i) e.step();
  EXPECT_FALSE(e.has_work());
  std::vector<Output> result;
  for (RequestId id : ids) result.push_back(out[id]);
  return result;
}

// Prompts that repeat themselves (so prompt lookup finds matches) over a small vocabulary (so
// that some drafts are right and some wrong), a third of them with a shared prefix.
inline std::vector<Job> repetitive_jobs(std::mt19937& rng, int n, int32_t n_vocab) {
  std::vector<Job> jobs;
  for (int i = 0; i < n; ++i) {
    Job j;
    std::vector<int32_t> motif(2 + rng() % 4);
    for (int32_t& t : motif) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    if (i % 3 == 0) {
      for (int32_t t = 0; t < 12; ++t) j.prompt.push_back((t * 7 + 1) % n_vocab);
    }
    for (uint32_t r = 0, reps = 2 + rng() % 8; r < reps; ++r) j.prompt.insert(j.prompt.end(), motif.begin(), motif.end());
    j.max_tokens = 1 + static_cast<int32_t>(rng() % 40);
    j.temperature = i % 2 == 0 ? 0.0f : 0.9f;
    j.seed = rng();
    j.n_logprobs = i % 5 == 0 ? 2 : -1;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

inline std::unique_ptr<Engine> fake_engine(int32_t n_blocks, EngineOptions o, int32_t n_vocab) {
  auto e = Engine::create(std::make_unique<FakeRunner>(n_blocks, 4, n_vocab), nullptr, o);
  EXPECT_TRUE(e.ok()) << e.status().message();
  return std::move(e).value();
}

inline void expect_same(const std::vector<Output>& spec, const std::vector<Output>& plain) {
  ASSERT_EQ(spec.size(), plain.size());
  for (size_t i = 0; i < spec.size(); ++i) {
    EXPECT_EQ(spec[i].tokens, plain[i].tokens) << "request " << i;
    EXPECT_EQ(spec[i].logprobs, plain[i].logprobs) << "request " << i;
    EXPECT_EQ(spec[i].finish, plain[i].finish) << "request " << i;
  }
}

}  // namespace ridge::engine::testing::spec_jobs
