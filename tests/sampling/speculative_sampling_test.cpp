// Speculative sampling's rejection rule: whatever the draft's distribution q, the tokens the
// target's verification returns follow the target's distribution p (chi-square over many draws,
// each sampler setting applied to both sides), drafts are kept at the rate sum(min(p, q)), and
// the test has the power to see a draft's own distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "chi_square.h"
#include "sampling/log_probs.h"
#include "sampling/sampler.h"

namespace ridge::sampling {
namespace {

using ridge::testing::log_of;

std::map<int32_t, double> as_map(const std::vector<TokenProb>& d) {
  std::map<int32_t, double> out;
  for (const TokenProb& tp : d) out[tp.token] += tp.prob;
  return out;
}

TEST(ChiSquareHelper, KnownQuantiles) {
  EXPECT_NEAR(testing::upper_gamma_q(1.0, 2.0), std::exp(-2.0), 1e-12);
  EXPECT_NEAR(testing::finish(5.991, 2).p_value, 0.05, 1e-4);    // chi2(2) 95% point
  EXPECT_NEAR(testing::finish(18.307, 10).p_value, 0.05, 1e-4);  // chi2(10)
  EXPECT_NEAR(testing::finish(3.841, 1).p_value, 0.05, 1e-4);    // chi2(1)
  EXPECT_NEAR(testing::finish(124.342, 100).p_value, 0.05, 1e-4);
}

struct Setting {
  const char* name;
  SamplingParams params;
  std::vector<int32_t> history;
};

std::vector<Setting> settings() {
  SamplingParams plain;
  plain.temperature = 1.0f;
  plain.top_k = 0;
  plain.top_p = 1.0f;
  plain.min_p = 0.0f;
  std::vector<Setting> out;
  out.push_back({"plain", plain, {}});
  SamplingParams p = plain;
  p.temperature = 0.7f;
  p.top_k = 5;
  out.push_back({"temperature 0.7, top-k 5", p, {}});
  p = plain;
  p.top_p = 0.8f;
  p.min_p = 0.05f;
  out.push_back({"top-p 0.8, min-p 0.05", p, {}});
  p = plain;
  p.temperature = 1.3f;
  p.repetition_penalty = 1.5f;
  p.frequency_penalty = 0.3f;
  p.presence_penalty = 0.2f;
  out.push_back({"penalties", p, {1, 1, 3, 0}});
  return out;
}

TEST(SpeculativeSampling, VerifiedTokensFollowTheTargetDistribution) {
  const std::vector<float> target = log_of({0.30, 0.22, 0.15, 0.12, 0.08, 0.06, 0.04, 0.03});
  const std::vector<float> draft = log_of({0.05, 0.10, 0.35, 0.05, 0.20, 0.05, 0.15, 0.05});
  const int n = 100000;
  for (const Setting& s : settings()) {
    SCOPED_TRACE(s.name);
    SamplingParams tp = s.params, dp = s.params;
    tp.seed = 7;
    dp.seed = 1234;
    Sampler t(tp, 8), d(dp, 8);
    const std::map<int32_t, double> p = as_map(t.distribution(target, s.history));
    const std::map<int32_t, double> q_dist = as_map(d.distribution(draft, s.history));
    std::map<int32_t, int64_t> verified, drafted;
    int64_t kept = 0;
    std::vector<TokenProb> q;
    for (int i = 0; i < n; ++i) {
      const int32_t x = d.sample_draft(draft, s.history, q);
      const int32_t y = t.verify_draft(target, s.history, x, q);
      ++drafted[x];
      ++verified[y];
      kept += y == x;
    }
    const testing::ChiSquare fit = testing::chi_square_fit(verified, p);
    EXPECT_GT(fit.p_value, 1e-4) << "chi2 " << fit.stat << " df " << fit.df;
    // The power to tell: the drafts themselves do not follow p.
    EXPECT_LT(testing::chi_square_fit(drafted, p).p_value, 1e-12);
    // Drafts are kept at the rate sum over tokens of min(p, q).
    double rate = 0;
    for (const auto& [tok, pt] : p) rate += std::min(pt, q_dist.contains(tok) ? q_dist.at(tok) : 0.0);
    const double sd = std::sqrt(rate * (1 - rate) / n);
    EXPECT_NEAR(static_cast<double>(kept) / n, rate, 5 * sd);
  }
}

TEST(SpeculativeSampling, GreedyTargetAlwaysGivesItsArgmax) {
  SamplingParams tp;
  tp.temperature = 0.0f;
  SamplingParams dp;
  dp.temperature = 1.0f;
  dp.top_k = 0;
  dp.top_p = 1.0f;
  dp.min_p = 0.0f;
  dp.seed = 3;
  Sampler t(tp, 4), d(dp, 4);
  const std::vector<float> target = log_of({0.1, 0.2, 0.6, 0.1});
  const std::vector<float> draft = log_of({0.25, 0.25, 0.25, 0.25});
  std::vector<TokenProb> q;
  for (int i = 0; i < 1000; ++i) {
    const int32_t x = d.sample_draft(draft, {}, q);
    EXPECT_EQ(t.verify_draft(target, {}, x, q), 2);
  }
}

TEST(SpeculativeSampling, ADraftOfTheSameDistributionIsAlwaysKept) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 0;
  p.top_p = 0.95f;
  p.min_p = 0.0f;
  p.seed = 11;
  Sampler t(p, 5);
  p.seed = 12;
  Sampler d(p, 5);
  const std::vector<float> logits = log_of({0.4, 0.3, 0.2, 0.05, 0.05});
  std::vector<TokenProb> q;
  for (int i = 0; i < 2000; ++i) {
    const int32_t x = d.sample_draft(logits, {}, q);
    EXPECT_EQ(t.verify_draft(logits, {}, x, q), x);
  }
}

}  // namespace
}  // namespace ridge::sampling
