// quality::perplexity: llama.cpp's chunking (second half of each chunk scored, BOS at each
// chunk's start), checked against the same negative log-likelihoods recomputed token by token in
// long double; short texts refused. Agreement with llama-perplexity itself is in
// tests/cli/perplexity_cli_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "kernels/kernels.h"
#include "engine/session.h"
#include "offline/presets.h"
#include "offline/synth.h"
#include "quality/perplexity.h"

namespace ridge::quality {
namespace {

struct Tiny {
  std::vector<uint8_t> bytes;
  std::unique_ptr<model::Model> model;
};

const model::Model& tiny() {
  static Tiny t = [] {
    Tiny r;
    auto cfg = offline::preset_config("tiny-qwen3");
    EXPECT_TRUE(cfg.ok());
    offline::SynthOptions so;
    so.type = GgmlType::kF32;
    so.seed = 9;
    gguf::Writer w;
    EXPECT_TRUE(offline::build_synthetic_model(*cfg, so, w).ok());
    r.bytes = std::move(w.write_to_memory()).value();
    auto file = gguf::File::parse(r.bytes, "tiny.gguf");
    EXPECT_TRUE(file.ok());
    auto m = model::Model::from_file(std::make_shared<const gguf::File>(std::move(file).value()),
                                     kernels::kernels_for(kernels::best_isa()));
    EXPECT_TRUE(m.ok()) << m.status().message();
    r.model = std::make_unique<model::Model>(std::move(m).value());
    return r;
  }();
  return *t.model;
}

long double nll_reference(std::span<const float> logits, int32_t token) {
  long double max = logits[0], sum = 0;
  for (float v : logits) max = std::max<long double>(max, v);
  for (float v : logits) sum += std::exp(static_cast<long double>(v) - max);
  return -(static_cast<long double>(logits[static_cast<size_t>(token)]) - max - std::log(sum));
}

TEST(Perplexity, TokenNll) {
  const std::vector<float> logits = {1.0f, 2.0f, -3.0f, 0.5f};
  for (int32_t t = 0; t < 4; ++t) EXPECT_NEAR(token_nll(logits, t), static_cast<double>(nll_reference(logits, t)), 1e-6);
  const std::vector<float> huge = {1000.0f, 999.0f};  // no overflow: the max is subtracted first
  EXPECT_NEAR(token_nll(huge, 1), 1.0 + std::log1p(std::exp(-1.0)), 1e-7);  // expf: float steps
}

TEST(Perplexity, ScoresTheSecondHalfOfEachChunkAfterBos) {
  const model::Model& m = tiny();
  constexpr int64_t kCtx = 16;
  constexpr int32_t kBos = 7;
  std::vector<int32_t> tokens;
  for (int i = 0; i < 3 * kCtx + 5; ++i) tokens.push_back((11 + 37 * i) % 300);  // 3 chunks, 5 left over
  ThreadPool pool(2);
  PerplexityOptions o;
  o.n_ctx = kCtx;
  o.n_batch = 5;  // steps that cut across the halves
  o.bos = kBos;
  auto r = perplexity(m, tokens, o, pool);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The same, token by token from a fresh session per chunk.
  long double sum = 0;
  int64_t count = 0;
  std::vector<double> running;
  for (int64_t c = 0; c < 3; ++c) {
    engine::SessionOptions so;
    so.n_ctx = kCtx;
    so.n_threads = 2;
    auto s = engine::Session::create(m, so);
    ASSERT_TRUE(s.ok());
    for (int64_t j = 0; j < kCtx - 1; ++j) {
      const int32_t in = j == 0 ? kBos : tokens[static_cast<size_t>(c * kCtx + j)];
      auto logits = s->eval(std::span(&in, 1));
      ASSERT_TRUE(logits.ok());
      if (j >= kCtx / 2) {
        sum += nll_reference(*logits, tokens[static_cast<size_t>(c * kCtx + j + 1)]);
        ++count;
      }
    }
    running.push_back(static_cast<double>(std::exp(sum / count)));
  }
  EXPECT_EQ(r->n_chunks, 3);
  EXPECT_EQ(r->n_scored, count);
  EXPECT_NEAR(r->ppl, static_cast<double>(std::exp(sum / count)), 1e-6 * r->ppl);  // expf in float against long double
  ASSERT_EQ(r->running.size(), running.size());
  for (size_t i = 0; i < running.size(); ++i) EXPECT_NEAR(r->running[i], running[i], 1e-6 * running[i]) << i;
  EXPECT_GT(r->ppl_error, 0);
  o.n_chunks = 1;
  auto one = perplexity(m, tokens, o, pool);
  ASSERT_TRUE(one.ok());
  EXPECT_NEAR(one->ppl, running[0], 1e-6 * running[0]);
}

TEST(Perplexity, RefusesWhatItCannotScore) {
  const model::Model& m = tiny();
  ThreadPool pool(1);
  PerplexityOptions o;
  o.n_ctx = 16;
  const std::vector<int32_t> short_text(31, 5);
  auto r = perplexity(m, short_text, o, pool);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("needs at least 32"), std::string::npos) << r.status().message();
  std::vector<int32_t> bad(32, 5);
  bad[20] = 1 << 30;
  r = perplexity(m, bad, o, pool);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("outside the vocabulary"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ridge::quality
