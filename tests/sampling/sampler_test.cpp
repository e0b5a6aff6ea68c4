// Each processor against small hand-computed cases. Logits are logs of simple probabilities, so
// the expected distributions are fractions worked out by hand in the comments.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "sampling/log_probs.h"

namespace ridge::sampling {
namespace {

const float kInf = std::numeric_limits<float>::infinity();

using ridge::testing::log_of;

// Plain multinomial sampling: temperature 1, nothing truncated.
SamplingParams plain() {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  return p;
}

// Checks `dist` holds exactly these (token, probability) pairs, in any order.
void expect_dist(const std::vector<TokenProb>& dist, const std::map<int32_t, double>& want) {
  ASSERT_EQ(dist.size(), want.size());
  double sum = 0.0;
  for (const TokenProb& tp : dist) {
    auto it = want.find(tp.token);
    ASSERT_NE(it, want.end()) << "unexpected token " << tp.token;
    EXPECT_NEAR(tp.prob, it->second, 1e-5) << "token " << tp.token;
    sum += tp.prob;
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

TEST(Sampler, GreedyPicksArgmaxLowestIdOnTies) {
  SamplingParams p = plain();
  p.temperature = 0.0f;
  Sampler s(p, 4);
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 2.0f};
  EXPECT_EQ(s.sample(logits, {}), 1);
  expect_dist(s.distribution(logits, {}), {{1, 1.0}});
}

TEST(Sampler, LogitBiasIsAddedAndMinusInfinityBans) {
  SamplingParams p = plain();
  p.temperature = 0.0f;
  p.logit_bias = {{0, 2.5f}, {1, -kInf}};
  Sampler s(p, 4);
  // 1+2.5 = 3.5 beats 3.0 at id 2; id 1 is banned.
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}, {}), 0);

  SamplingParams q = plain();
  q.logit_bias = {{1, -kInf}};
  Sampler t(q, 3);
  // p = [0.5, 0.25, 0.25] with id 1 banned -> [2/3, 0, 1/3].
  expect_dist(t.distribution(log_of({0.5, 0.25, 0.25}), {}), {{0, 2.0 / 3}, {2, 1.0 / 3}});
}

TEST(Sampler, EveryTokenBannedGivesLowestId) {
  SamplingParams p = plain();
  p.logit_bias = {{0, -kInf}, {1, -kInf}, {2, -kInf}};
  Sampler s(p, 3);
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 2.0f, 3.0f}, {}), 0);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplingParams p = plain();
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  Sampler s(p, 4);
  // Seen tokens 0 and 1: 2 -> 1, -1 -> -2; unseen 1.5 now wins.
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 1.5f};
  EXPECT_EQ(s.sample(logits, std::vector<int32_t>{0, 1, 0}), 3);

  SamplingParams q = plain();
  q.repetition_penalty = 2.0f;
  Sampler t(q, 2);
  // logits [ln 4, ln 1/2]: token 0 seen -> ln4/2 = ln 2; token 1 seen -> 2 ln(1/2) = ln(1/4).
  // Weights 2 and 1/4 -> [8/9, 1/9]. Repeats in history count once.
  expect_dist(t.distribution(std::vector<float>{std::log(4.0f), std::log(0.5f)},
                             std::vector<int32_t>{0, 1, 1, 1}),
              {{0, 8.0 / 9}, {1, 1.0 / 9}});
}

TEST(Sampler, FrequencyAndPresencePenaltiesUseCounts) {
  SamplingParams p = plain();
  p.frequency_penalty = std::log(2.0f);
  p.presence_penalty = std::log(3.0f);
  Sampler s(p, 3);
  // Equal logits. Token 1 seen twice: weight 1 / (2^2 * 3) = 1/12; token 2 once: 1/6; token 0: 1.
  // Sum 15/12 -> [12/15, 1/15, 2/15].
  expect_dist(s.distribution(std::vector<float>{0.0f, 0.0f, 0.0f}, std::vector<int32_t>{1, 2, 1}),
              {{0, 12.0 / 15}, {1, 1.0 / 15}, {2, 2.0 / 15}});
}

TEST(Sampler, PenaltyWindowCoversOnlyTheLastTokens) {
  SamplingParams p = plain();
  p.presence_penalty = std::log(2.0f);
  p.penalty_last_n = 2;
  Sampler s(p, 4);
  // History 0 1 2 3: only 2 and 3 are in the window -> weights [1, 1, 1/2, 1/2] -> /3.
  const std::vector<int32_t> history = {0, 1, 2, 3};
  expect_dist(s.distribution(std::vector<float>(4, 0.0f), history),
              {{0, 1.0 / 3}, {1, 1.0 / 3}, {2, 1.0 / 6}, {3, 1.0 / 6}});

  p.penalty_last_n = 0;  // disabled
  Sampler off(p, 4);
  expect_dist(off.distribution(std::vector<float>(4, 0.0f), history),
              {{0, 0.25}, {1, 0.25}, {2, 0.25}, {3, 0.25}});

  p.penalty_last_n = -1;  // whole history
  Sampler all(p, 5);
  // Tokens 0..3 halved, token 4 unseen: [1/2,1/2,1/2,1/2,1] / 3.
  expect_dist(all.distribution(std::vector<float>(5, 0.0f), history),
              {{0, 1.0 / 6}, {1, 1.0 / 6}, {2, 1.0 / 6}, {3, 1.0 / 6}, {4, 1.0 / 3}});
}

TEST(Sampler, HistoryIdsOutsideTheVocabularyAreIgnored) {
  SamplingParams p = plain();
  p.presence_penalty = 5.0f;
  Sampler s(p, 2);
  expect_dist(s.distribution(std::vector<float>{0.0f, 0.0f}, std::vector<int32_t>{-1, 2, 99}),
              {{0, 0.5}, {1, 0.5}});
}

TEST(Sampler, TemperatureSharpensAndFlattens) {
  SamplingParams p = plain();
  p.temperature = 0.5f;
  Sampler s(p, 3);
  // p^(1/T) = p^2: [0.25, 0.09, 0.04] / 0.38.
  expect_dist(s.distribution(log_of({0.5, 0.3, 0.2}), {}),
              {{0, 0.25 / 0.38}, {1, 0.09 / 0.38}, {2, 0.04 / 0.38}});
  p.temperature = 2.0f;
  Sampler t(p, 2);
  // sqrt([0.8, 0.2]) = [0.8944, 0.4472] -> [2/3, 1/3].
  expect_dist(t.distribution(log_of({0.8, 0.2}), {}), {{0, 2.0 / 3}, {1, 1.0 / 3}});
}

TEST(Sampler, TopKKeepsTheKMostLikely) {
  SamplingParams p = plain();
  p.top_k = 2;
  Sampler s(p, 4);
  // Ordered ids so the cut is not just a prefix of the array: p = [0.1, 0.4, 0.2, 0.3].
  expect_dist(s.distribution(log_of({0.1, 0.4, 0.2, 0.3}), {}), {{1, 4.0 / 7}, {3, 3.0 / 7}});
  p.top_k = 10;  // larger than the vocabulary: no cut
  Sampler t(p, 2);
  expect_dist(t.distribution(log_of({0.75, 0.25}), {}), {{0, 0.75}, {1, 0.25}});
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingTheMass) {
  SamplingParams p = plain();
  p.top_p = 0.65f;
  Sampler s(p, 4);
  // Sorted 0.4, 0.3 (cum 0.7 >= 0.65) -> [4/7, 3/7].
  expect_dist(s.distribution(log_of({0.2, 0.4, 0.1, 0.3}), {}), {{1, 4.0 / 7}, {3, 3.0 / 7}});
  p.top_p = 0.75f;
  Sampler t(p, 4);
  // 0.4, 0.7, 0.9 >= 0.75 -> [4/9, 3/9, 2/9].
  expect_dist(t.distribution(log_of({0.2, 0.4, 0.1, 0.3}), {}),
              {{0, 2.0 / 9}, {1, 4.0 / 9}, {3, 3.0 / 9}});
  p.top_p = 0.3f;  // the top token alone reaches it
  Sampler u(p, 4);
  expect_dist(u.distribution(log_of({0.2, 0.4, 0.1, 0.3}), {}), {{1, 1.0}});
}

TEST(Sampler, MinPDropsTokensBelowFractionOfTheTop) {
  SamplingParams p = plain();
  p.min_p = 0.3f;
  Sampler s(p, 4);
  // Threshold 0.3 * 0.4 = 0.12: drops 0.1 -> [4/9, 3/9, 2/9].
  expect_dist(s.distribution(log_of({0.4, 0.3, 0.2, 0.1}), {}),
              {{0, 4.0 / 9}, {1, 3.0 / 9}, {2, 2.0 / 9}});
  p.min_p = 0.6f;
  Sampler t(p, 4);
  // Threshold 0.24 -> [4/7, 3/7].
  expect_dist(t.distribution(log_of({0.4, 0.3, 0.2, 0.1}), {}), {{0, 4.0 / 7}, {1, 3.0 / 7}});
}

TEST(Sampler, TopPSeesTheTopKRenormalizedDistribution) {
  SamplingParams p = plain();
  p.top_k = 3;
  p.top_p = 0.75f;
  Sampler s(p, 4);
  // After top-k: [4/9, 3/9, 2/9]; cum 0.444, 0.778 >= 0.75 -> two tokens [4/7, 3/7]. (On the
  // unrenormalized 0.4, 0.7, 0.9 it would keep three.)
  expect_dist(s.distribution(log_of({0.4, 0.3, 0.2, 0.1}), {}), {{0, 4.0 / 7}, {1, 3.0 / 7}});
}

TEST(Sampler, TemperatureAppliesBeforeTruncation) {
  SamplingParams p = plain();
  p.temperature = 0.5f;
  p.min_p = 0.2f;
  Sampler s(p, 3);
  // p^2 = [0.25, 0.09, 0.04]: threshold 0.2 * 0.25 = 0.05 drops 0.04 -> [25/34, 9/34].
  // (Untempered, 0.2 >= 0.2 * 0.5 would survive.)
  expect_dist(s.distribution(log_of({0.5, 0.3, 0.2}), {}), {{0, 25.0 / 34}, {1, 9.0 / 34}});
}

TEST(Sampler, TiesAtTheCutKeepLowestIds) {
  SamplingParams p = plain();
  p.top_p = 0.5f;
  constexpr int32_t kN = 1000;  // more than the first sorted head: exercises its growth
  Sampler s(p, kN);
  const auto dist = s.distribution(std::vector<float>(kN, 1.0f), {});
  ASSERT_EQ(dist.size(), 500u);  // cum (i+1)/1000 reaches 0.5 at i = 499
  for (int32_t i = 0; i < 500; ++i) {
    EXPECT_EQ(dist[static_cast<size_t>(i)].token, i);
    EXPECT_NEAR(dist[static_cast<size_t>(i)].prob, 1.0 / 500, 1e-6);
  }
}

// Straightforward reference: sort everything, then cut in the documented order.
std::map<int32_t, double> reference_dist(const std::vector<float>& logits, const SamplingParams& p) {
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < ids.size()) ids.resize(p.top_k);
  std::vector<double> probs;
  double z = 0.0;
  for (int32_t id : ids) {
    probs.push_back(std::exp((double(logits[id]) - logits[ids[0]]) / p.temperature));
    z += probs.back();
  }
  for (double& q : probs) q /= z;
  size_t n = 0;
  double cum = 0.0;
  while (n < ids.size()) {
    if (probs[n] < p.min_p * probs[0]) break;
    cum += probs[n++];
    if (cum >= p.top_p) break;
  }
  std::map<int32_t, double> out;
  for (size_t i = 0; i < n; ++i) out[ids[i]] = probs[i] / cum;
  return out;
}

TEST(Sampler, LargeVocabularyMatchesFullSortReference) {
  constexpr int32_t kN = 150000;
  Rng rng(3);
  std::vector<float> logits(kN);
  // Heavy-tailed: a few large logits over a sea of small ones, like a real model.
  for (float& l : logits) l = static_cast<float>(-std::log(rng.uniform() + 1e-12) * 2.0);
  struct Case {
    float temperature;
    int32_t top_k;
    float top_p, min_p;
  };
  for (const Case& c : {Case{1.0f, 0, 0.9f, 0.0f}, Case{1.0f, 0, 0.5f, 0.0f},
                        Case{1.0f, 0, 1.0f, 0.01f}, Case{0.7f, 0, 0.99f, 0.001f},
                        Case{1.5f, 0, 0.95f, 0.0f}, Case{0.8f, 40, 0.95f, 0.05f},
                        Case{1.2f, 5000, 0.9f, 0.0f}}) {
    SamplingParams p = plain();
    p.temperature = c.temperature;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    Sampler s(p, kN);
    const auto want = reference_dist(logits, p);
    const auto got = s.distribution(logits, {});
    ASSERT_EQ(got.size(), want.size()) << c.temperature << " " << c.top_k << " " << c.top_p;
    for (const TokenProb& tp : got) {
      ASSERT_TRUE(want.count(tp.token));
      ASSERT_NEAR(tp.prob, want.at(tp.token), 1e-6);
    }
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  SamplingParams p = plain();
  p.seed = 1234;
  const std::vector<float> logits = log_of({0.2, 0.2, 0.2, 0.2, 0.2});
  Sampler a(p, 5), b(p, 5);
  p.seed = 1235;
  Sampler c(p, 5);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 200; ++i) {
    ta.push_back(a.sample(logits, {}));
    tb.push_back(b.sample(logits, {}));
    tc.push_back(c.sample(logits, {}));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);  // 5^-200 chance of a false failure
  a.reseed(1234);
  EXPECT_EQ(a.sample(logits, {}), ta[0]);
}

TEST(Sampler, SeedPinsTheTokenStream) {
  // Draw i takes the first token whose cumulative probability exceeds u_i from Rng(99); the
  // expected tokens follow from the Rng reference vectors and the uniform distribution.
  SamplingParams p = plain();
  p.seed = 99;
  Sampler s(p, 4);
  Rng rng(99);
  const std::vector<float> logits = log_of({0.25, 0.25, 0.25, 0.25});
  for (int i = 0; i < 50; ++i) {
    const int32_t want = static_cast<int32_t>(rng.uniform() * 4.0);
    EXPECT_EQ(s.sample(logits, {}), want) << i;
  }
}

TEST(Sampler, FrequenciesMatchTheDistribution) {
  SamplingParams p = plain();
  p.seed = 5;
  p.top_k = 3;  // drops 0.1: expected [0.5, 0.25, 0.15] / 0.9
  Sampler s(p, 4);
  const std::vector<float> logits = log_of({0.15, 0.5, 0.1, 0.25});
  constexpr int kDraws = 100000;
  std::vector<int> counts(4, 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(s.sample(logits, {}))];
  const double want[4] = {0.15 / 0.9, 0.5 / 0.9, 0.0, 0.25 / 0.9};
  for (int t = 0; t < 4; ++t) {
    // Standard error <= 0.0016; allow 5 of them.
    EXPECT_NEAR(counts[t] / double(kDraws), want[t], 0.008) << "token " << t;
  }
  EXPECT_EQ(counts[2], 0);
}

TEST(Sampler, LogprobsAreOfTheRawDistribution) {
  SamplingParams p = plain();
  p.temperature = 0.0f;  // processing must not change the reported log-probabilities
  p.logit_bias = {{2, 10.0f}};
  Sampler s(p, 4);
  const std::vector<float> logits = log_of({0.5, 0.25, 0.15, 0.1});
  const SampleResult r = s.sample_with_logprobs(logits, {}, 2);
  EXPECT_EQ(r.token, 2);
  EXPECT_NEAR(r.logprob, std::log(0.15), 1e-6);
  ASSERT_EQ(r.top.size(), 2u);
  EXPECT_EQ(r.top[0].token, 0);
  EXPECT_NEAR(r.top[0].logprob, std::log(0.5), 1e-6);
  EXPECT_EQ(r.top[1].token, 1);
  EXPECT_NEAR(r.top[1].logprob, std::log(0.25), 1e-6);
  // Shifting every logit changes nothing.
  std::vector<float> shifted = logits;
  for (float& l : shifted) l += 100.0f;
  EXPECT_NEAR(logprobs_of(shifted, 3, 0).logprob, std::log(0.1), 1e-5);
}

TEST(Sampler, TopLogprobsCountBeyondTheVocabularyGivesAllFiniteTokens) {
  std::vector<float> logits = log_of({0.25, 0.75, 0.5});
  logits[2] = -kInf;
  const SampleResult r = logprobs_of(logits, 0, 10);
  ASSERT_EQ(r.top.size(), 2u);
  EXPECT_EQ(r.top[0].token, 1);
  EXPECT_NEAR(r.top[0].logprob, std::log(0.75), 1e-6);
  EXPECT_EQ(r.top[1].token, 0);
  EXPECT_TRUE(logprobs_of(logits, 0, -1).top.empty());
  EXPECT_EQ(logprobs_of(logits, 2, 0).logprob, -kInf);
}

TEST(Sampler, SampleWithLogprobsDrawsTheSameTokens) {
  SamplingParams p = plain();
  p.seed = 77;
  Sampler a(p, 3), b(p, 3);
  const std::vector<float> logits = log_of({0.3, 0.3, 0.4});
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(a.sample(logits, {}), b.sample_with_logprobs(logits, {}, 1).token);
  }
}

TEST(Sampler, CreateRejectsInvalidParams) {
  SamplingParams p;
  p.top_p = 2.0f;
  auto r = Sampler::create(p, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("top_p"), std::string::npos);
  EXPECT_TRUE(Sampler::create(SamplingParams(), 10).ok());
}

}  // namespace
}  // namespace ridge::sampling
