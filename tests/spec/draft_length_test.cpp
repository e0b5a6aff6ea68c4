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
