#include "spec/draft_length.h"

#include <gtest/gtest.h>

#include <vector>

namespace ridge::spec {
namespace {

TEST(DraftLength, ExpectedTokensIsTheGeometricSum) {
  EXPECT_DOUBLE_EQ(expected_tokens(0.0, 5), 1.0);
  EXPECT_DOUBLE_EQ(expected_tokens(1.0, 4), 5.0);
  EXPECT_DOUBLE_EQ(expected_tokens(0.5, 3), 1.875);
}

TEST(DraftLength, ChoosesByRatePerUnitTime) {
  const std::vector<double> flat(9, 1.0);  // bandwidth-bound: 8 drafts cost what a plain step does
  EXPECT_EQ(best_draft_length(0.8, flat, 0.0), 8);
  EXPECT_EQ(best_draft_length(0.0, flat, 0.0), 0);  // nothing gained, nothing proposed
  // Each extra row costs 10% of a step: at alpha 0.5 one draft gains (1.5 / 1.1), a second
  // (1.75 / 1.2) a little more, a third (1.875 / 1.3) less.
  std::vector<double> rising;
  for (int k = 0; k <= 8; ++k) rising.push_back(1.0 + 0.1 * k);
  EXPECT_EQ(best_draft_length(0.5, rising, 0.0), 2);
  EXPECT_EQ(best_draft_length(0.05, rising, 0.0), 0);
  // A draft model costing 30% of a step per token: only a high acceptance pays for it.
  EXPECT_EQ(best_draft_length(0.3, flat, 0.3), 0);
  EXPECT_GT(best_draft_length(0.9, flat, 0.3), 2);
}

// The model's costs until a plain step and a step of that kind are timed, then the measured ratio
// (which then changes the choice: two drafts measured at 1.6 plain steps no longer pay at 0.5).
TEST(DraftLength, StepCostsTurnFromTheModelToTheTiming) {
  StepCosts c({1.0, 1.0, 1.0}, 0.25);
  EXPECT_EQ(c.steps(), (std::vector<double>{1.0, 1.0, 1.0}));
  EXPECT_EQ(best_draft_length(0.5, c.steps(), 0.0), 2);
  c.record_step(2, 0.016);  // no plain step timed yet: nothing to compare with
  EXPECT_EQ(c.steps(), (std::vector<double>{1.0, 1.0, 1.0}));
  c.record_step(0, 0.010);
  EXPECT_EQ(c.steps(), (std::vector<double>{1.0, 1.0, 1.6}));
  EXPECT_EQ(best_draft_length(0.5, c.steps(), 0.0), 1);
  c.record_step(0, 0.020);  // decayed average: 0.8 x 10 ms + 0.2 x 20 ms = 12 ms
  EXPECT_NEAR(c.steps()[2], 16.0 / 12.0, 1e-12);
  EXPECT_DOUBLE_EQ(c.draft(), 0.25);
  c.record_draft(4, 0.012);  // 3 ms a token against 12 ms
  EXPECT_NEAR(c.draft(), 0.25, 1e-12);
  c.record_draft(3, 0.003);  // 1 ms a token: 0.8 x 3 + 0.2 x 1 = 2.6 ms
  EXPECT_NEAR(c.draft(), 2.6 / 12.0, 1e-12);
}

TEST(DraftLength, AcceptanceRateCountsTestedTokensAndForgets) {
  AcceptanceRate r;
  EXPECT_DOUBLE_EQ(r.value(), 0.5);  // the prior
  r.update(8, 2);                    // 2 accepted, the third rejected: 2 of 3 tested
  EXPECT_DOUBLE_EQ(r.value(), 3.0 / 5.0);
  r.update(4, 4);                    // all accepted: 4 of 4
  EXPECT_NEAR(r.value(), (0.9 * 2 + 4 + 1) / (0.9 * 3 + 4 + 2), 1e-12);
  for (int i = 0; i < 100; ++i) r.update(8, 0);  // a long run of rejections: the rate falls
  EXPECT_LT(r.value(), 0.1);
}

}  // namespace
}  // namespace ridge::spec

namespace ridge::spec {
namespace {

// Bandwidth-bound: a draft row costs 1% of a step, so every draft a likely sequence proposes pays,
// the likelier sequence's first; within max_total.
TEST(AllocateDrafts, DraftsWhileRowsAreCheapLikelierSequencesFirst) {
  const std::vector<double> alpha{0.9, 0.3};
  const std::vector<int64_t> len{4, 4};
  const auto cheap = [](int64_t k) { return 1.0 + 0.01 * static_cast<double>(k); };
  const std::vector<int64_t> k = allocate_drafts(alpha, len, 2, 64, cheap);
  EXPECT_EQ(k[0], 4);
  EXPECT_GE(k[1], 1);
  const std::vector<int64_t> capped = allocate_drafts(alpha, len, 2, 3, cheap);
  EXPECT_EQ(capped[0], 3);  // 0.9, 0.81, 0.73 beat 0.3
  EXPECT_EQ(capped[1], 0);
}

// Compute-bound: 64 decodes, each row costs what a decode does; an accepted draft never earns a
// whole row, so speculation is off.
TEST(AllocateDrafts, OffWhenTheStepIsComputeBound) {
  const std::vector<double> alpha(64, 0.9);
  const std::vector<int64_t> len(64, 8);
  const auto linear = [](int64_t k) { return 64.0 + static_cast<double>(k); };
  const std::vector<int64_t> k = allocate_drafts(alpha, len, 64, 64, linear);
  for (int64_t v : k) EXPECT_EQ(v, 0);
  // Past the knee of a roof: cheap until the step turns compute-bound at 80 rows.
  const auto roof = [](int64_t rows) { return std::max(80.0, 64.0 + static_cast<double>(rows)); };
  const std::vector<int64_t> some = allocate_drafts(alpha, len, 64, 64, roof);
  int64_t total = 0;
  for (int64_t v : some) total += v;
  EXPECT_GE(total, 15);
  EXPECT_LE(total, 17);
}

TEST(AllocateDrafts, NothingToDraft) {
  const auto t = [](int64_t) { return 1.0; };
  EXPECT_TRUE(allocate_drafts({}, {}, 3, 64, t).empty());
  const std::vector<double> alpha{0.5};
  const std::vector<int64_t> len{0};
  EXPECT_EQ(allocate_drafts(alpha, len, 1, 64, t)[0], 0);
}

TEST(StepTimes, ScalesTheModelOnTheLineThroughTheMeasuredRatios) {
  StepTimes t;
  EXPECT_DOUBLE_EQ(t.estimate(4, 10.0), 10.0);  // nothing measured: the model
  t.record(2, 4.0, 2.0);                         // twice the model at 2 rows
  EXPECT_DOUBLE_EQ(t.estimate(2, 3.0), 6.0);
  EXPECT_DOUBLE_EQ(t.estimate(9, 5.0), 10.0);    // one row count: flat
  for (int i = 0; i < 40; ++i) {                 // ratio 2 + (rows - 2) / 2
    t.record(2, 4.0, 2.0);
    t.record(4, 3.0, 1.0);
  }
  EXPECT_NEAR(t.estimate(3, 1.0), 2.5, 1e-9);
  EXPECT_NEAR(t.estimate(10, 2.0), 12.0, 1e-9);  // extrapolated
  // One step 10x slower than the line moves it by a bounded amount.
  t.record(4, 30.0, 1.0);
  EXPECT_LT(t.estimate(4, 1.0), 3.5);  // unclamped: about 4.3
  // Steps that get cheaper with rows (noise) do not make rows cheaper than flat.
  StepTimes falling;
  for (int i = 0; i < 10; ++i) {
    falling.record(2, 4.0, 1.0);
    falling.record(8, 2.0, 1.0);
  }
  EXPECT_NEAR(falling.estimate(2, 1.0), falling.estimate(30, 1.0), 1e-9);
}

}  // namespace
}  // namespace ridge::spec
