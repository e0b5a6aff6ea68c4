// The rejection rule inside the engine (EngineOptions::spec_rejection, a draft model sampling
// its drafts): on real weights (stories260K, its Q4_0 copy drafting), thousands of sampled
// requests batched together give, position by position, the same token distribution as plain
// decoding (two-sample chi-square), with truncation and penalties applied by both sides; greedy
// requests in the same batch stay token for token plain decoding's; drafts were both kept and
// rejected, and every block of both pools comes back.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "chi_square.h"
#include "engine/engine.h"
#include "kernels/kernels.h"
#include "run_binary.h"
#include "test_files.h"
#include "tokenizer/tokenizer.h"

namespace ridge::engine {
namespace {

using ridge::testing::kStories;


struct Outcome {
  std::vector<std::vector<int32_t>> tokens;  // per request
  EngineStats stats;
};

Outcome run_requests(Engine& e, const std::vector<int32_t>& prompt, int n, const sampling::SamplingParams& sp) {
  Outcome out;
  out.tokens.resize(static_cast<size_t>(n));
  std::map<RequestId, size_t> index;
  // In waves of max-seqs requests: once a wave's prompts are in, its steps only decode (the
  // steps that draft).
  for (int i = 0; i < n; ++i) {
    if (i % 64 == 0) {
      for (int s = 0; s < 1000000 && e.has_work(); ++s) e.step();
    }
    Request r;
    r.prompt_tokens = prompt;
    r.params = sp;
    if (i % 10 == 0) r.params.temperature = 0;  // greedy ones in the same batch
    r.params.seed = static_cast<uint64_t>(i);
    r.params.max_tokens = 6;
    r.ignore_eos = true;
    r.on_output = [&out, &index](const RequestOutput& ev) {
      auto& t = out.tokens[index.at(ev.id)];
      t.insert(t.end(), ev.tokens.begin(), ev.tokens.end());
    };
    auto id = e.add_request(std::move(r));
    EXPECT_TRUE(id.ok()) << id.status().message();
    index[*id] = static_cast<size_t>(i);
  }
  for (int s = 0; s < 1000000 && e.has_work(); ++s) e.step();
  out.stats = e.stats();
  return out;
}

TEST(DraftRejection, SampledRequestsKeepPlainDecodingsDistribution) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const std::string draft_path = (std::filesystem::temp_directory_path() /
                                  ("ridge_engine_q4_draft_" + std::to_string(::getpid()) + ".gguf")).string();
  const auto made = ridge::testing::run_ridge("quantize " + kStories + " " + draft_path + " q4_0");
  ASSERT_EQ(made.rc, 0) << made.text;
  const kernels::Kernels& k = kernels::kernels_for(kernels::best_isa());
  auto target = model::Model::load(kStories, k);
  auto draft = model::Model::load(draft_path, k);
  ASSERT_TRUE(target.ok() && draft.ok());
  std::filesystem::remove(draft_path);
  auto tok = tokenizer::Tokenizer::from_gguf(target->file());
  ASSERT_TRUE(tok.ok());
  const std::vector<int32_t> prompt = tok->encode("Lily", true, true);

  sampling::SamplingParams plain_sp;
  plain_sp.temperature = 1.0f;
  plain_sp.top_k = 0;
  plain_sp.top_p = 1.0f;
  plain_sp.min_p = 0.0f;
  sampling::SamplingParams cut_sp;
  cut_sp.temperature = 0.8f;
  cut_sp.top_k = 40;
  cut_sp.top_p = 0.9f;
  cut_sp.repetition_penalty = 1.3f;
  for (const sampling::SamplingParams& sp : {plain_sp, cut_sp}) {
    SCOPED_TRACE(sp.top_k);
    EngineOptions o;
    o.max_seqs = 64;
    o.max_model_len = 64;
    o.kv_bytes = 1 << 22;
    o.spec_cost_rule = false;
    auto plain = Engine::create(*target, nullptr, o);
    ASSERT_TRUE(plain.ok()) << plain.status().message();
    o.spec = SpecMethod::kDraft;
    o.spec_max = 3;
    o.draft_model = &*draft;
    auto spec = Engine::create(*target, nullptr, o);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    constexpr int kRequests = 4000;
    const Outcome a = run_requests(**plain, prompt, kRequests, sp);
    const Outcome b = run_requests(**spec, prompt, kRequests, sp);
    EXPECT_GT(b.stats.n_draft_tokens, kRequests);
    EXPECT_GT(b.stats.n_accepted_tokens, 0);
    EXPECT_LT(b.stats.n_accepted_tokens, b.stats.n_draft_tokens);
    EXPECT_EQ(b.stats.kv_blocks_used, 0);
    EXPECT_EQ(b.stats.draft_blocks_used, 0);
    std::vector<std::map<int32_t, int64_t>> pa(6), pb(6);
    for (int i = 0; i < kRequests; ++i) {
      const auto& x = a.tokens[static_cast<size_t>(i)];
      const auto& y = b.tokens[static_cast<size_t>(i)];
      ASSERT_EQ(x.size(), 6u);
      ASSERT_EQ(y.size(), 6u);
      if (i % 10 == 0) {
        EXPECT_EQ(x, y) << "greedy request " << i;
        continue;
      }
      for (size_t j = 0; j < 6; ++j) {
        ++pa[j][x[j]];
        ++pb[j][y[j]];
      }
    }
    for (size_t j = 1; j < 6; ++j) {  // token 0 comes from the prompt's logits, before any draft
      const ridge::testing::ChiSquare c = ridge::testing::chi_square_same(pa[j], pb[j]);
      EXPECT_GT(c.p_value, 1e-4) << "token " << j << ": chi2 " << c.stat << " df " << c.df;
      EXPECT_GT(c.df, 3) << "token " << j;
    }
  }
}

}  // namespace
}  // namespace ridge::engine
