// Speculative decoding with sampled drafts and the rejection rule, end to end on real weights
// (stories260K, a 512-token vocabulary): over thousands of seeds, the tokens generated with a
// draft model that often disagrees with the target (its Q4_0 copy) follow the
// same distribution as plain decoding's, position by position (two-sample chi-square); a model
// drafting for itself at temperature 1 has every draft kept under the rejection rule, while the
// match rule keeps only drafts that coincide with the target's own draw.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "chi_square.h"
#include "cli/generation.h"
#include "run_binary.h"
#include "test_files.h"

namespace ridge::cli {
namespace {

using ridge::testing::kStories;


// Multinomial sampling at temperature 1, nothing cut.
sampling::SamplingParams plain_sampling() {
  sampling::SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

// Truncation and penalties, which the draft's sampler applies as the target's does.
sampling::SamplingParams cut_sampling() {
  sampling::SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.02f;
  p.repetition_penalty = 1.3f;
  p.presence_penalty = 0.2f;
  return p;
}

Loaded load(const std::string& draft, const std::string& rule, const sampling::SamplingParams& sp = plain_sampling()) {
  GenerationOptions o;
  o.model_path = kStories;
  o.n_threads = 1;
  o.n_ctx = 64;
  o.sampling = sp;
  o.seed = 1;
  o.draft_path = draft;
  o.spec_rule = rule;
  o.spec_max = 3;
  auto l = load_for_generation(o);
  EXPECT_TRUE(l.ok()) << l.status().message();
  l->spec_cost_rule = false;  // draft every step, whatever it costs
  return std::move(*l);
}

// The tokens generated after the prompt with `seed` (n_max of them, fewer at end of text).
std::vector<int32_t> generate_once(Loaded& l, const sampling::SamplingParams& sp, uint64_t seed, int64_t n_max,
                                   spec::SpecStats* spec = nullptr) {
  const std::vector<int32_t> prompt = l.tok->encode("Lily", true, true);
  l.session->truncate(0);
  auto logits = l.session->eval(prompt);
  EXPECT_TRUE(logits.ok());
  sampling::SamplingParams p = sp;
  p.seed = seed;
  sampling::Sampler sampler(p, static_cast<int32_t>(l.model->config().n_vocab));
  std::vector<int32_t> history = prompt, out;
  auto st = generate(l, sampler, *logits, history, n_max, {}, [](std::string_view) {}, &out);
  EXPECT_TRUE(st.ok());
  if (spec && st.ok()) {
    spec->n_drafted += st->spec.n_drafted;
    spec->n_accepted += st->spec.n_accepted;
  }
  return out;
}

TEST(SpecRejection, OutputFollowsPlainDecodingsDistribution) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  const std::string draft = (std::filesystem::temp_directory_path() /
                             ("ridge_q4_draft_" + std::to_string(::getpid()) + ".gguf")).string();
  const auto made = ridge::testing::run_ridge("quantize " + kStories + " " + draft + " q4_0");
  ASSERT_EQ(made.rc, 0) << made.text;
  for (const sampling::SamplingParams& sp : {plain_sampling(), cut_sampling()}) {
    SCOPED_TRACE(fmt::format("temperature {} top-k {}", sp.temperature, sp.top_k));
    Loaded plain = load("", "auto", sp);
    Loaded spec = load(draft, "auto", sp);
    ASSERT_TRUE(spec.spec_rejection);
    const int n = 4000, len = 6;
    std::vector<std::map<int32_t, int64_t>> a(len), b(len);
    spec::SpecStats stats;
    for (int seed = 0; seed < n; ++seed) {
      const std::vector<int32_t> x = generate_once(plain, sp, seed, len);
      const std::vector<int32_t> y = generate_once(spec, sp, seed, len, &stats);
      for (int j = 0; j < len; ++j) {
        ++a[j][j < static_cast<int>(x.size()) ? x[j] : -2];
        ++b[j][j < static_cast<int>(y.size()) ? y[j] : -2];
      }
    }
    // Drafts were made and both kept and rejected, so both branches of the rule ran.
    EXPECT_GT(stats.n_drafted, n);
    EXPECT_GT(stats.n_accepted, 0);
    EXPECT_LT(stats.n_accepted, stats.n_drafted);
    for (int j = 1; j < len; ++j) {  // token 0 comes from the prompt's logits, before any draft
      const testing::ChiSquare c = testing::chi_square_same(a[j], b[j]);
      EXPECT_GT(c.p_value, 1e-4) << "token " << j << ": chi2 " << c.stat << " df " << c.df;
      EXPECT_GT(c.df, 3) << "token " << j << " has too few categories to test";
    }
  }
  std::filesystem::remove(draft);
}

TEST(SpecRejection, SelfDraftIsAlwaysKeptUnderTheRejectionRule) {
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found (../shared)";
  Loaded rejection = load(kStories, "rejection");
  Loaded match = load(kStories, "match");
  spec::SpecStats r, m;
  for (int seed = 0; seed < 200; ++seed) {
    generate_once(rejection, plain_sampling(), seed, 24, &r);
    generate_once(match, plain_sampling(), seed, 24, &m);
  }
  ASSERT_GT(r.n_drafted, 100);
  EXPECT_EQ(r.n_accepted, r.n_drafted);
  ASSERT_GT(m.n_drafted, 100);
  EXPECT_LT(m.n_accepted, m.n_drafted * 9 / 10);
}

}  // namespace
}  // namespace ridge::cli
